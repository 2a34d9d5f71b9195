#include "tests/e2e/stack.h"

#include <algorithm>

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "tests/fixtures/test_paths.h"

namespace unmask::testing {
namespace fs = std::filesystem;

namespace {
constexpr auto kStartTimeout = std::chrono::seconds(60);

int MustPort(Process& p, const std::string& needle, const std::string& what) {
  const int port = p.WaitForPort(needle, kStartTimeout);
  if (port <= 0) throw std::runtime_error(what + " did not start:\n" + p.output());
  return port;
}

// argv + the metrics flag (unless `extra` has one) + extra.
std::vector<std::string> WithExtra(std::vector<std::string> argv, const std::vector<std::string>& extra) {
  bool has_metrics = false;
  for (const auto& a : extra) has_metrics |= a.rfind("--metrics-listen", 0) == 0;
  if (!has_metrics) argv.insert(argv.end(), {"--metrics-listen", "127.0.0.1:0"});
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// The metrics port a service printed before it listened ("... metrics on port N"); 0 if none.
int MetricsPort(Process& p) {
  const std::string out = p.output();
  const auto at = out.find("metrics on port ");
  return at == std::string::npos ? 0 : std::atoi(out.c_str() + at + 16);
}
}  // namespace

Stack::Stack() : Stack(TestDataPath("tiny-llada"), "tiny-llada") {
  fs::copy_file(TestDataPath("tokenizers/llada-like.tokenizer.json"), root_.File("tiny-llada") + "/tokenizer.json");
}

Stack::Stack(const std::string& model_dir, const std::string& name) : model_name_(name) {
  const std::string model = root_.File(name);
  fs::create_directories(model);
  for (const auto& f : fs::directory_iterator(model_dir))
    fs::copy_file(f.path(), model + "/" + f.path().filename().string());
}

Stack::~Stack() {
  for (auto& s : schedulers_) s.reset();
  for (auto& e : executors_) e.reset();
  if (loader_ && loader_->running()) {  // SIGTERM: the loader frees its shared-memory segments
    loader_->Kill(SIGTERM);
    loader_->Wait();
  }
  loader_.reset();
  redis_.reset();
}

void Stack::StartRedis(bool append_only, const std::vector<std::string>& extra) {
  redis_port_ = FreePort();
  std::vector<std::string> argv = {REDIS_SERVER_BIN, "--port", std::to_string(redis_port_), "--bind", "127.0.0.1",
                                   "--save", "", "--dir", root_.path()};
  argv.insert(argv.end(), {"--appendonly", append_only ? "yes" : "no"});
  argv.insert(argv.end(), extra.begin(), extra.end());
  redis_argv_ = argv;
  redis_ = std::make_unique<Process>(argv);
  if (redis_->WaitForLine("Ready to accept connections", kStartTimeout).empty())
    throw std::runtime_error("redis-server did not start:\n" + redis_->output());
}

void Stack::StartLoader(const std::vector<std::string>& extra) {
  loader_ = std::make_unique<Process>(WithExtra(
      {LOADER_BIN, "--listen", "127.0.0.1:0", "--model-root", root_.path(), "--drain-timeout-seconds", "2"}, extra));
  loader_port_ = MustPort(*loader_, "listening on port", "unmask-loader");
  loader_metrics_port_ = MetricsPort(*loader_);
}

int Stack::StartExecutor(const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {EXECUTOR_BIN, "--listen", "127.0.0.1:0", "--loader", loader_address(),
                                   "--model", model_name_,
                                   "--executor-id", "executor-" + std::to_string(executors_.size()),
                                   "--drain-timeout-seconds", "2"};
  // bf16 weights and fp32 compute unless the test gives its own (or "--precision", "auto" for the default).
  auto given = [&](const char* flag) { return std::find(extra.begin(), extra.end(), flag) != extra.end(); };
  if (!given("--load-precision")) argv.insert(argv.end(), {"--load-precision", "bf16"});
  if (!given("--precision")) argv.insert(argv.end(), {"--precision", "fp32"});
  executor_argv_.push_back(WithExtra(argv, extra));
  executors_.push_back(std::make_unique<Process>(executor_argv_.back()));
  executor_ports_.push_back(MustPort(*executors_.back(), "unmask-executor: serving", "unmask-executor"));
  executor_metrics_ports_.push_back(MetricsPort(*executors_.back()));
  return static_cast<int>(executors_.size()) - 1;
}

int Stack::StartScheduler(const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {SCHEDULER_BIN, "--listen", "127.0.0.1:0", "--model-root", root_.path(),
                                   "--drain-timeout-seconds", "2", "--consumer-id",
                                   "scheduler-" + std::to_string(schedulers_.size())};
  std::string addresses;
  for (std::size_t i = 0; i < executor_ports_.size(); ++i) addresses += (i ? "," : "") + executor_address(static_cast<int>(i));
  if (!addresses.empty()) argv.insert(argv.end(), {"--executors", addresses});
  if (redis_port_ > 0) argv.insert(argv.end(), {"--redis", redis_address()});
  scheduler_argv_.push_back(WithExtra(argv, extra));
  schedulers_.push_back(std::make_unique<Process>(scheduler_argv_.back()));
  scheduler_ports_.push_back(MustPort(*schedulers_.back(), "listening on port", "unmask-scheduler"));
  scheduler_metrics_ports_.push_back(MetricsPort(*schedulers_.back()));
  return static_cast<int>(schedulers_.size()) - 1;
}

CliResult Stack::Cli(int scheduler, const std::string& args) const {
  return RunCli("--scheduler " + scheduler_address(scheduler) + " " + args);
}

CliResult RunCli(const std::string& args) { return RunCommand(std::string(CLI_BIN) + " " + args); }

int HttpPort(Process& scheduler) {
  const std::string out = scheduler.output();
  const std::string needle = "OpenAI-compatible HTTP on port ";
  const auto at = out.find(needle);
  return at == std::string::npos ? -1 : std::atoi(out.c_str() + at + needle.size());
}

}  // namespace unmask::testing
