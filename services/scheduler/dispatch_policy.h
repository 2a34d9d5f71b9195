// Which executor gets the next job. gRPC-free: works on capacity snapshots.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/util/status.h"

namespace unmask::scheduler {

enum class DispatchPolicy { kLeastBusy, kRoundRobin, kRandom };
StatusOr<DispatchPolicy> ParseDispatchPolicy(const std::string& text);  // least_busy | round_robin | random

struct ExecutorSnapshot {
  std::string address;
  std::string executor_id;
  bool healthy = false;        // answered its last capacity poll
  std::vector<std::string> models;
  int running = 0;             // as reported, plus jobs this scheduler sent since the last poll
  int queued = 0;
  int max_concurrent = 1;      // the executor's own limit
  std::uint64_t budget_bytes = 0;
  // Continuous batching's admission: what running jobs' predicted peaks may add up to, and what
  // they add up to now (0 and 0 from an executor that does not report them).
  std::uint64_t job_budget_bytes = 0, job_bytes_in_use = 0;
  std::string model_config_json;
  std::string precision;        // the weights' storage type
  std::string compute_precision, compute_reason;
  std::string device;          // as the executor reports it: "cpu", "cuda:0", ...
};

// The executors a job may run on (Accepted.device_class): any, accelerators only, or CPU only.
inline constexpr const char* kDeviceClassAccelerator = "accelerator";
inline constexpr const char* kDeviceClassCpu = "cpu";
// What one job may need on `e`: its free memory less the reserve, and no more than its job
// budget (an executor refuses a job whose predicted peak exceeds that, reason DOES_NOT_FIT).
std::uint64_t FitBudget(const ExecutorSnapshot& e);
bool IsCpuDevice(const std::string& device);  // "cpu", "cpu:N"; an executor reporting nothing counts as CPU
bool InDeviceClass(const ExecutorSnapshot& e, const std::string& device_class);  // "" = any

class Dispatcher {
 public:
  Dispatcher(DispatchPolicy policy, int per_executor_limit, std::uint64_t seed = 0)
      : policy_(policy), per_executor_limit_(per_executor_limit), rng_(seed) {}

  // Index into `executors` of the one to use for `model`, or -1 when none is healthy, serves
  // the model, is in `device_class` ("" = any) and has room (running + queued below
  // min(max_concurrent, per-executor limit)). least_busy takes the executor whose load is
  // lowest: the larger of its job slots in use and its job budget in use.
  int Pick(const std::vector<ExecutorSnapshot>& executors, const std::string& model,
           const std::string& device_class = "");
  // Whether to take the next job from the queue now, with `reserved` jobs already taken and not
  // yet sent: true while the healthy executors' free slots outnumber those (or none is healthy:
  // the job then waits in placement, where its deadline and cancellation are watched), so that
  // jobs wait in the queue, where its depth counts them, rather than in placement.
  bool MayClaim(const std::vector<ExecutorSnapshot>& executors, int reserved = 0) const;

 private:
  int Limit(const ExecutorSnapshot& e) const;     // its own limit, within per_executor_limit_
  bool HasRoom(const ExecutorSnapshot& e) const;  // running + queued below its limit

  DispatchPolicy policy_;
  int per_executor_limit_;  // 0 = only the executor's own limit
  std::size_t next_ = 0;    // round robin cursor
  std::mt19937_64 rng_;
};

}  // namespace unmask::scheduler
