// Stack: killing processes with SIGKILL and starting them again where they were (chaos tests).
#include <signal.h>

#include <stdexcept>

#include "tests/e2e/stack.h"

namespace unmask::testing {
namespace {

constexpr auto kReviveTimeout = std::chrono::seconds(60);

// `argv` with the value after --listen replaced by 127.0.0.1:port.
std::vector<std::string> OnPort(std::vector<std::string> argv, int port) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--listen") argv[i + 1] = "127.0.0.1:" + std::to_string(port);
  }
  return argv;
}

void KillInto(std::unique_ptr<Process>& process, std::vector<std::unique_ptr<Process>>& retired) {
  if (!process) return;
  process->Kill(SIGKILL);
  process->Wait();
  retired.push_back(std::move(process));
}

// Starts `argv` and waits for `needle`; the port may still be held for a moment by the process
// that just died, so a start that exits at once is tried again.
std::unique_ptr<Process> StartAgain(const std::vector<std::string>& argv, const std::string& needle,
                                    std::vector<std::unique_ptr<Process>>& retired) {
  const auto until = std::chrono::steady_clock::now() + kReviveTimeout;
  for (;;) {
    auto p = std::make_unique<Process>(argv);
    if (!p->WaitForLine(needle, kReviveTimeout).empty()) return p;
    const std::string out = p->output();
    retired.push_back(std::move(p));
    if (std::chrono::steady_clock::now() >= until) throw std::runtime_error(argv[0] + " did not start again:\n" + out);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int MetricsPortOf(const Process& p) {
  const std::string out = p.output();
  const auto at = out.find("metrics on port ");
  return at == std::string::npos ? 0 : std::atoi(out.c_str() + at + 16);
}

}  // namespace

void Stack::KillRedis() { KillInto(redis_, retired_); }

void Stack::ReviveRedis() {
  redis_ = StartAgain(redis_argv_, "Ready to accept connections", retired_);
}

void Stack::KillExecutor(int i) { KillInto(executors_[i], retired_); }

void Stack::ReviveExecutor(int i) {
  executors_[i] = StartAgain(OnPort(executor_argv_[i], executor_ports_[i]), "unmask-executor: serving", retired_);
  executor_metrics_ports_[i] = MetricsPortOf(*executors_[i]);
}

void Stack::KillScheduler(int i) { KillInto(schedulers_[i], retired_); }

void Stack::ReviveScheduler(int i) {
  schedulers_[i] = StartAgain(OnPort(scheduler_argv_[i], scheduler_ports_[i]), "listening on port", retired_);
  scheduler_metrics_ports_[i] = MetricsPortOf(*schedulers_[i]);
}

}  // namespace unmask::testing
