// The executors a scheduler dispatches to: a static list and/or a DNS name (a Kubernetes headless
// service, re-resolved on every poll), each polled for capacity with GetCapacity.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "services/common/tls_options.h"
#include "services/scheduler/dispatch_policy.h"
#include "unmask/v1/executor.grpc.pb.h"

namespace unmask::scheduler {

// The largest message the scheduler takes from an executor (a Run stream's event): 64 MiB.
inline constexpr int kMaxExecutorMessageBytes = 64 << 20;

struct ExecutorPoolOptions {
  std::vector<std::string> addresses;  // host:port
  std::vector<std::string> dns_names;  // host:port whose host resolves to every executor
  std::chrono::milliseconds poll_interval{500};
  std::chrono::milliseconds poll_timeout{1000};
  std::optional<tls::ClientTlsMaterial> tls;  // how to reach the executors; std::nullopt: plaintext
};

class ExecutorPool {
 public:
  explicit ExecutorPool(ExecutorPoolOptions options);
  ~ExecutorPool();

  void Start();  // polls in the background
  void PollOnce();
  std::vector<ExecutorSnapshot> Snapshot() const;
  // Counts a job sent to `address` until the next poll reports it.
  void NoteDispatched(const std::string& address);
  // A job this scheduler sent to `address` ended: its slot is free now, not at the next poll
  // (a finished job held its slot for up to a poll interval, and a closed loop of 8 clients kept
  // only 3.7 jobs a step in the executor's batch). Wakes WaitForRoom.
  void NoteFinished(const std::string& address);
  // Waits up to `timeout` for a slot to free or a poll to land (whichever may give a job room).
  void WaitForRoom(std::chrono::milliseconds timeout) const;
  // Takes an executor out of dispatch until its next successful poll (its call just failed).
  void MarkUnhealthy(const std::string& address);
  std::shared_ptr<v1::Executor::Stub> Stub(const std::string& address);
  // Blocks until some executor serving `model` is healthy, or `timeout` passes.
  bool WaitForModel(const std::string& model, std::chrono::milliseconds timeout) const;

 private:
  std::vector<std::string> Resolve() const;

  ExecutorPoolOptions options_;
  mutable std::mutex mu_;
  mutable std::condition_variable room_;  // NoteFinished, PollOnce
  std::uint64_t changes_ = 0;             // under mu_: bumped by each of them
  std::map<std::string, ExecutorSnapshot> executors_;
  std::map<std::string, std::shared_ptr<v1::Executor::Stub>> stubs_;
  std::atomic<bool> stop_{false};
  std::thread poller_;
};

}  // namespace unmask::scheduler
