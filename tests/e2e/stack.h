// The whole unmask stack as real processes on loopback, for end-to-end tests: a model root
// with the golden checkpoint, optionally redis-server, the loader, executors, schedulers, and
// the `unmask` CLI to talk to them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/e2e/process.h"
#include "tests/fixtures/run_command.h"
#include "tests/fixtures/temp_checkpoint.h"

namespace unmask::testing {

// Any command line, through the shell (stdout and stderr together): RunCommand of
// tests/fixtures/run_command.h.
using CliResult = CommandResult;

// The unmask CLI with `args` (stdout and stderr together), e.g. loader commands that need no
// scheduler.
CliResult RunCli(const std::string& args);
// The port a scheduler started with --http-port 0 serves the OpenAI-compatible API on (from its
// start-up log); -1 when it serves none.
int HttpPort(Process& scheduler);

class Stack {
 public:
  Stack();  // writes the model root (tiny-llada with the llada-like tokenizer)
  // A model root holding a copy of the checkpoint directory `model_dir` under `name`.
  Stack(const std::string& model_dir, const std::string& name);
  ~Stack();

  // Every service gets `--metrics-listen 127.0.0.1:0` unless `extra` names --metrics-listen;
  // the port it bound is *_metrics_port() (0 when it serves no metrics).
  // `extra` goes to redis-server as is (e.g. {"--appendfsync", "always"}).
  void StartRedis(bool append_only = false, const std::vector<std::string>& extra = {});
  void StartLoader(const std::vector<std::string>& extra = {});
  // Returns the executor's index; its address is executor_address(i).
  int StartExecutor(const std::vector<std::string>& extra = {});
  // Returns the scheduler's index.
  int StartScheduler(const std::vector<std::string>& extra = {});

  std::string redis_address() const { return "127.0.0.1:" + std::to_string(redis_port_); }
  std::string loader_address() const { return "127.0.0.1:" + std::to_string(loader_port_); }
  std::string executor_address(int i) const { return "127.0.0.1:" + std::to_string(executor_ports_[i]); }
  std::string scheduler_address(int i) const { return "127.0.0.1:" + std::to_string(scheduler_ports_[i]); }
  Process& loader() { return *loader_; }
  Process& executor(int i) { return *executors_[i]; }
  Process& scheduler(int i) { return *schedulers_[i]; }
  int loader_metrics_port() const { return loader_metrics_port_; }
  int executor_metrics_port(int i) const { return executor_metrics_ports_[i]; }
  int scheduler_metrics_port(int i) const { return scheduler_metrics_ports_[i]; }
  const std::string& model_root() const { return root_.path(); }

  // Chaos (stack_restart.cc): Kill* sends SIGKILL, waits for the exit and keeps the dead
  // process's output in retired(); Revive* starts the same command again on the same port (the
  // Redis one on the same AOF directory), so that peers configured with the address find it.
  void KillRedis();
  void ReviveRedis();
  void KillExecutor(int i);
  void ReviveExecutor(int i);
  void KillScheduler(int i);
  void ReviveScheduler(int i);
  const std::vector<std::unique_ptr<Process>>& retired() const { return retired_; }

  // Runs `unmask <args>` against scheduler i.
  CliResult Cli(int scheduler, const std::string& args) const;

 private:
  TempDir root_;
  std::string model_name_;  // what StartExecutor serves
  std::unique_ptr<Process> redis_, loader_;
  std::vector<std::unique_ptr<Process>> executors_, schedulers_;
  int redis_port_ = 0, loader_port_ = 0, loader_metrics_port_ = 0;
  std::vector<int> executor_ports_, scheduler_ports_, executor_metrics_ports_, scheduler_metrics_ports_;
  // The commands that started each process (with --listen port 0), for Revive*.
  std::vector<std::string> redis_argv_;
  std::vector<std::vector<std::string>> executor_argv_, scheduler_argv_;
  std::vector<std::unique_ptr<Process>> retired_;
};

}  // namespace unmask::testing
