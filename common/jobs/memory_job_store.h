// MemoryJobStore: the embedded default for one machine. Same semantics as RedisJobStore, held
// in this process under one mutex; blocking claims wait on one condition variable, event reads on their job's.
// Jobs do not survive a restart (kDescription says so; the scheduler prints it at start-up).
//
// Terminal jobs and idempotency keys are removed lazily once their TTL (measured with the
// options' clock) has passed: at the next call that looks at the store.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/jobs/job_store.h"

namespace unmask::jobs {

class MemoryJobStore final : public JobStore {
 public:
  static constexpr const char* kDescription =
      "in-process job store (no Redis address given): jobs do not survive a restart of this "
      "process";

  explicit MemoryJobStore(JobStoreOptions options = {});

  std::string Describe() const override { return kDescription; }
  StatusOr<SubmitResult> Submit(const JobRecord& record) override;
  StatusOr<std::optional<ClaimedJob>> Claim(const std::string& consumer_id,
                                            std::int64_t block_ms) override;
  Status MarkRunning(const DeliveryHandle& handle, const std::string& executor) override;
  Status Heartbeat(const DeliveryHandle& handle) override;
  Status Complete(const std::string& job_id, const DeliveryHandle& handle,
                  const std::string& result) override;
  Status Fail(const std::string& job_id, const DeliveryHandle& handle,
              const Status& error) override;
  Status ConfirmCancelled(const std::string& job_id, const DeliveryHandle& handle) override;
  Status Finish(const std::string& job_id, const DeliveryHandle& handle, const Outcome& outcome) override;
  StatusOr<JobState> Requeue(const DeliveryHandle& handle) override;
  StatusOr<JobState> Cancel(const std::string& job_id) override;
  StatusOr<bool> CancelRequested(const std::string& job_id) override;
  StatusOr<JobRecord> Get(const std::string& job_id) override;
  StatusOr<std::vector<JobRecord>> List(const ListFilter& filter) override;
  StatusOr<std::int64_t> QueueDepth() override;
  StatusOr<std::int64_t> Position(const std::string& job_id) override;
  StatusOr<ReclaimReport> ReclaimStale(const std::string& consumer_id, std::int64_t min_idle_ms,
                                       int max_attempts) override;
  StatusOr<std::int64_t> AppendEvent(const std::string& job_id, const std::string& event) override;
  StatusOr<EventBatch> ReadEvents(const std::string& job_id, std::int64_t from_index,
                                  std::int64_t block_ms) override;

  // When a terminal job will be removed (unix ms, options' clock); nullopt while it is live or
  // unknown. The Redis store's equivalent is the key's TTL.
  std::optional<std::int64_t> ExpiresAtMs(const std::string& job_id);
  // Callers blocked in Claim or ReadEvents right now (a gauge; tests wait for it).
  std::int64_t WaitingCallers();

 private:
  struct Job {
    JobRecord record;
    std::uint64_t seq = 0;  // queue order within a priority
    std::string delivery_id;
    std::string consumer;
    std::int64_t last_seen_ms = 0;  // claim or heartbeat; the reaper's idle time
    std::vector<std::string> events;
    std::int64_t expires_at_ms = 0;  // 0 while live
    // Readers of this job's events wait here, so an event wakes only them. Shared: a waiter keeps
    // it while the job is purged under it.
    std::shared_ptr<std::condition_variable> events_cv = std::make_shared<std::condition_variable>();
  };
  // Orders the queue: higher priority first, then submit (or requeue) order.
  using QueueKey = std::pair<int, std::uint64_t>;
  static QueueKey KeyOf(const Job& job) { return {-job.record.priority, job.seq}; }

  void PurgeLocked(std::int64_t now);
  StatusOr<Job*> FindLocked(const std::string& job_id);
  StatusOr<Job*> FindDeliveryLocked(const DeliveryHandle& handle);
  std::optional<ClaimedJob> ClaimLocked(const std::string& consumer_id, std::int64_t now);
  void EnqueueLocked(Job& job, std::int64_t now);
  void SetStateLocked(Job& job, JobState state, std::int64_t now);
  void FinishLocked(Job& job, JobState state, std::int64_t now);

  const JobStoreOptions options_;
  std::mutex mu_;
  std::condition_variable queue_cv_;  // a job was queued
  std::unordered_map<std::string, Job> jobs_;
  std::map<QueueKey, std::string> queue_;
  std::set<std::string> running_;
  struct IdempotencyEntry {
    std::string job_id;
    std::int64_t expires_at_ms = 0;
  };
  std::unordered_map<std::string, IdempotencyEntry> idempotency_;
  // (time, "j" + job id | "i" + idempotency key): what PurgeLocked looks at.
  std::multimap<std::int64_t, std::string> expiries_;
  std::uint64_t next_seq_ = 0;
  std::uint64_t next_delivery_ = 0;
  std::int64_t waiting_ = 0;
};

}  // namespace unmask::jobs
