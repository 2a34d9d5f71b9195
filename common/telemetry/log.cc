#include "common/telemetry/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace unmask::telemetry {
namespace {

std::mutex& NameMutex() {
  static std::mutex mu;
  return mu;
}
std::string& ServiceName() {
  static std::string name;
  return name;
}
std::atomic<int> g_min_level{static_cast<int>(LogLevel::kInfo)};

bool NeedsQuotes(std::string_view v) {
  if (v.empty()) return true;
  for (unsigned char c : v) {
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f) return true;
  }
  return false;
}

void AppendValue(std::string& out, std::string_view v) {
  if (!NeedsQuotes(v)) {
    out.append(v);
    return;
  }
  out += '"';
  for (unsigned char c : v) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < ' ' || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void AppendField(std::string& out, std::string_view key, std::string_view value) {
  out += ' ';
  out.append(key);
  out += '=';
  AppendValue(out, value);
}

std::string Timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

}  // namespace

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

void SetLogServiceName(std::string name) {
  std::lock_guard<std::mutex> lock(NameMutex());
  ServiceName() = std::move(name);
}

void SetMinLogLevel(LogLevel level) { g_min_level.store(static_cast<int>(level)); }

std::string FormatLogLine(LogLevel level, std::string_view trace_id, std::string_view job_id,
                          std::string_view message, std::initializer_list<LogField> fields) {
  std::string out = "ts=" + Timestamp();
  AppendField(out, "level", LogLevelName(level));
  {
    std::lock_guard<std::mutex> lock(NameMutex());
    if (!ServiceName().empty()) AppendField(out, "service", ServiceName());
  }
  if (!trace_id.empty()) AppendField(out, "trace_id", trace_id);
  if (!job_id.empty()) AppendField(out, "job_id", job_id);
  AppendField(out, "msg", message);
  for (const auto& [k, v] : fields) AppendField(out, k, v);
  return out;
}

void Log(LogLevel level, std::string_view trace_id, std::string_view job_id, std::string_view message,
         std::initializer_list<LogField> fields) {
  if (static_cast<int>(level) < g_min_level.load(std::memory_order_relaxed)) return;
  std::string line = FormatLogLine(level, trace_id, job_id, message, fields);
  line += '\n';
  // One write(2) per line: lines from different threads do not interleave.
  std::size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + off, line.size() - off);
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace unmask::telemetry
