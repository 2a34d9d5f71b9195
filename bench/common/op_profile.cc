#include "bench/common/op_profile.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace unmask::bench {

namespace {

using Clock = std::chrono::steady_clock;

struct Totals {
  std::mutex mu;
  std::map<std::string, std::pair<std::int64_t, double>> by_name;  // calls, seconds
};
Totals& Global() {
  static Totals* t = new Totals;
  return *t;
}

thread_local int t_depth = 0;

struct Started : at::ObserverContext {
  Clock::time_point start;
  bool top = false;
};

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction&) {
  auto ctx = std::make_unique<Started>();
  ctx->top = t_depth++ == 0;
  ctx->start = Clock::now();
  return ctx;
}

void OnEnd(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  --t_depth;
  auto* s = static_cast<Started*>(ctx);
  if (!s->top) return;
  const double seconds = std::chrono::duration<double>(Clock::now() - s->start).count();
  Totals& t = Global();
  std::lock_guard<std::mutex> lock(t.mu);
  auto& entry = t.by_name[fn.name()];
  ++entry.first;
  entry.second += seconds;
}

}  // namespace

OpProfile::OpProfile() {
  {
    std::lock_guard<std::mutex> lock(Global().mu);
    Global().by_name.clear();
  }
  handle_ = at::addGlobalCallback(at::RecordFunctionCallback(OnStart, OnEnd).scopes({at::RecordScope::FUNCTION}));
}

OpProfile::~OpProfile() { at::removeCallback(handle_); }

void OpProfile::Print(std::ostream& out, int top) const {
  std::vector<std::pair<std::string, std::pair<std::int64_t, double>>> rows;
  {
    std::lock_guard<std::mutex> lock(Global().mu);
    rows.assign(Global().by_name.begin(), Global().by_name.end());
  }
  double sum = 0;
  for (const auto& r : rows) sum += r.second.second;
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  char line[256];
  out << "top-level ATen operators, all threads (summed " << sum * 1e3 << " ms):\n";
  for (int i = 0; i < top && i < static_cast<int>(rows.size()); ++i) {
    const auto& [name, v] = rows[i];
    std::snprintf(line, sizeof(line), "  %-40s %8lld calls %9.1f ms %5.1f%% %8.1f us/call\n", name.c_str(),
                  static_cast<long long>(v.first), v.second * 1e3, sum > 0 ? 100 * v.second / sum : 0.0,
                  v.first > 0 ? 1e6 * v.second / static_cast<double>(v.first) : 0.0);
    out << line;
  }
}

}  // namespace unmask::bench
