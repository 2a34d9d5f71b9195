// Takes jobs from the job store and runs them on executors: claim, pick an executor, stream its
// steps into the job's event log, store the result before acknowledging. An executor that dies
// mid-job gets its job requeued (another executor finishes it); a scheduler that dies leaves its
// deliveries idle, and the reaper of any replica reclaims them.
//
// Telemetry: a job's spans continue the trace stored with it (the accepting span's context):
// scheduler.queue (backdated to the job's creation, ended at the claim) and the CLIENT span of
// the executor call, whose context goes to the executor in the metadata (and in
// RunRequest.traceparent). Metrics: queue depth, queue wait seconds. Log lines carry the trace
// id and the job id.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/jobs/job_store.h"
#include "common/telemetry/tracer.h"
#include "services/scheduler/dispatch_policy.h"
#include "services/scheduler/executor_pool.h"
#include "services/scheduler/model_catalog.h"

namespace unmask::telemetry {
class ServiceMetrics;
}

namespace unmask::scheduler {

struct DispatcherOptions {
  std::string consumer_id = "scheduler";
  // Jobs this scheduler runs at once, over all executors (each thread relays one job's stream).
  // Not the executors' limit: a thread takes a job from the queue only while some executor has
  // room. 4 capped an executor batching 8 jobs at 3.7 a step under 8 clients.
  int threads = 64;
  DispatchPolicy policy = DispatchPolicy::kLeastBusy;
  int per_executor_limit = 0;            // 0 = the executor's own limit
  std::int64_t heartbeat_ms = 2000;
  std::int64_t reaper_interval_ms = 2000;
  std::int64_t reaper_min_idle_ms = 10000;  // a delivery idle this long belongs to a dead scheduler
  int max_attempts = 3;
  // How long a job's outcome (complete, fail, requeue) is retried while the job store is
  // unreachable (a Redis restart); after that the delivery stays pending for a reaper.
  std::int64_t store_retry_ms = 30000;
};

class JobDispatcher {
 public:
  // `tracer` must outlive the dispatcher; `metrics` may be null.
  JobDispatcher(jobs::JobStore& store, ExecutorPool& pool, ModelCatalog& catalog, DispatcherOptions options,
                const telemetry::Tracer& tracer = telemetry::Tracer::Disabled(),
                telemetry::ServiceMetrics* metrics = nullptr);
  ~JobDispatcher();
  void Start();
  void Stop();  // finishes the jobs in flight

 private:
  void ClaimLoop();
  bool Reserve();    // a slot for the next job from the queue, if the executors have one
  void Unreserve();
  void ReaperLoop();
  // A claimed job, by step: claim (NoteClaim), wait for an executor (PlaceJob), relay its run
  // into the job's event log (RelayRun), store the outcome (FinishJob).
  struct RunningJob;
  struct Placement;
  struct Relayed;
  void RunJob(const jobs::ClaimedJob& job);
  void NoteClaim(RunningJob& run);
  bool PlaceJob(RunningJob& run, Placement* placement);
  telemetry::Span StartRunSpan(const RunningJob& run, const Placement& placement, grpc::ClientContext* ctx);
  Relayed RelayRun(RunningJob& run, const Placement& placement);
  void FinishJob(RunningJob& run, const Placement& placement, Relayed& relayed);
  void FinishCancelled(RunningJob& run);
  void Beat(RunningJob& run);
  bool CancelRequested(const std::string& job_id);
  void UpdateQueueDepth();
  // Runs `write` until it is not Unavailable, the dispatcher stops or store_retry_ms passes;
  // returns its last status (logged unless OK).
  Status Persist(const char* what, const std::string& job_id, const std::function<Status()>& write);

  jobs::JobStore& store_;
  ExecutorPool& pool_;
  ModelCatalog& catalog_;
  DispatcherOptions options_;
  const telemetry::Tracer& tracer_;
  telemetry::ServiceMetrics* metrics_;
  Dispatcher picker_;
  std::mutex picker_mu_;
  int reserved_ = 0;  // under picker_mu_: jobs taken from the queue and not yet sent (Reserve)
  // The turn to look for work: the one thread holding it waits for an executor slot, then for a
  // job; the other idle threads sleep here. So a freed slot or a new job wakes one thread, not
  // every idle one (each woken claimer would run the store's claim, a script on Redis).
  std::mutex claim_turn_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// The text so far: known tokens decoded, masked positions shown as '_'.
std::string PartialText(const tokenizer::Tokenizer& tok, const std::vector<std::int64_t>& tokens, std::int64_t mask_id);

}  // namespace unmask::scheduler
