// MemoryJobStore: submit, claim and the delivery lifecycle. Queries and events are in
// memory_job_store_query.cc.
#include "common/jobs/memory_job_store.h"

#include <chrono>

namespace unmask::jobs {

MemoryJobStore::MemoryJobStore(JobStoreOptions options) : options_(std::move(options)) {}

void MemoryJobStore::PurgeLocked(std::int64_t now) {
  while (!expiries_.empty() && expiries_.begin()->first <= now) {
    auto node = expiries_.extract(expiries_.begin());
    const std::string& tagged = node.mapped();
    std::string name = tagged.substr(1);
    if (tagged[0] == 'j') {
      auto it = jobs_.find(name);
      // A job's expiry is only ever set once (when it finishes), so a match means it is due.
      if (it != jobs_.end() && it->second.expires_at_ms == node.key()) {
        it->second.events_cv->notify_all();  // a reader still waiting sees it gone
        jobs_.erase(it);
      }
    } else {
      auto it = idempotency_.find(name);
      if (it != idempotency_.end() && it->second.expires_at_ms <= now) idempotency_.erase(it);
    }
  }
}

StatusOr<MemoryJobStore::Job*> MemoryJobStore::FindLocked(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return NotFoundError("job " + job_id + ": not found");
  return &it->second;
}

StatusOr<MemoryJobStore::Job*> MemoryJobStore::FindDeliveryLocked(const DeliveryHandle& handle) {
  UNMASK_ASSIGN_OR_RETURN(Job * job, FindLocked(handle.job_id));
  if (job->record.state != JobState::kRunning || job->delivery_id != handle.delivery_id) {
    return FailedPreconditionError("job " + handle.job_id + ": delivery " + handle.delivery_id +
                                   " is no longer current (job is " +
                                   JobStateName(job->record.state) +
                                   "); it was reclaimed or already finished");
  }
  return job;
}

void MemoryJobStore::SetStateLocked(Job& job, JobState state, std::int64_t now) {
  job.record.state = state;
  job.record.updated_unix_ms = now;
  if (state == JobState::kRunning) {
    running_.insert(job.record.job_id);
  } else {
    running_.erase(job.record.job_id);
  }
}

void MemoryJobStore::EnqueueLocked(Job& job, std::int64_t now) {
  job.seq = ++next_seq_;
  job.delivery_id.clear();
  job.consumer.clear();
  job.record.executor.clear();
  job.record.started_unix_ms = 0;
  SetStateLocked(job, JobState::kQueued, now);
  queue_.emplace(KeyOf(job), job.record.job_id);
  queue_cv_.notify_one();
}

void MemoryJobStore::FinishLocked(Job& job, JobState state, std::int64_t now) {
  if (job.record.state == JobState::kQueued) queue_.erase(KeyOf(job));
  SetStateLocked(job, state, now);
  job.record.finished_unix_ms = now;
  job.delivery_id.clear();
  job.expires_at_ms = now + options_.result_ttl_ms;
  expiries_.emplace(job.expires_at_ms, "j" + job.record.job_id);
  job.events_cv->notify_all();
}

StatusOr<SubmitResult> MemoryJobStore::Submit(const JobRecord& record) {
  UNMASK_RETURN_IF_ERROR(ValidateNewJob(record));
  std::lock_guard<std::mutex> lock(mu_);
  const std::int64_t now = options_.clock();
  PurgeLocked(now);
  if (!record.idempotency_key.empty()) {
    auto it = idempotency_.find(record.idempotency_key);
    if (it != idempotency_.end() && jobs_.count(it->second.job_id) != 0) {
      return SubmitResult{it->second.job_id, true};
    }
  }
  std::string job_id = record.job_id.empty() ? NewJobId() : record.job_id;
  if (jobs_.count(job_id) != 0) return AlreadyExistsError("job " + job_id + ": already exists");

  Job job;
  job.record.job_id = job_id;
  job.record.model = record.model;
  job.record.payload = record.payload;
  job.record.priority = record.priority;
  job.record.deadline_unix_ms = record.deadline_unix_ms;
  job.record.idempotency_key = record.idempotency_key;
  job.record.traceparent = record.traceparent;
  job.record.created_unix_ms = now;
  Job& stored = jobs_.emplace(job_id, std::move(job)).first->second;
  EnqueueLocked(stored, now);
  if (!record.idempotency_key.empty()) {
    std::int64_t expires = now + options_.idempotency_ttl_ms;
    idempotency_[record.idempotency_key] = {job_id, expires};
    expiries_.emplace(expires, "i" + record.idempotency_key);
  }
  return SubmitResult{job_id, false};
}

std::optional<ClaimedJob> MemoryJobStore::ClaimLocked(const std::string& consumer_id,
                                                      std::int64_t now) {
  while (!queue_.empty()) {
    auto head = queue_.begin();
    Job& job = jobs_.at(head->second);
    if (job.record.deadline_unix_ms != 0 && job.record.deadline_unix_ms <= now) {
      job.record.error = "deadline passed before the job started";
      FinishLocked(job, JobState::kExpired, now);  // also removes it from the queue
      continue;
    }
    queue_.erase(head);
    job.delivery_id = std::to_string(++next_delivery_);
    job.consumer = consumer_id;
    job.last_seen_ms = now;
    job.record.started_unix_ms = now;
    SetStateLocked(job, JobState::kRunning, now);
    return ClaimedJob{job.record,
                      DeliveryHandle{job.record.job_id, "memory", job.delivery_id, consumer_id}};
  }
  return std::nullopt;
}

StatusOr<std::optional<ClaimedJob>> MemoryJobStore::Claim(const std::string& consumer_id,
                                                          std::int64_t block_ms) {
  if (consumer_id.empty()) return InvalidArgumentError("consumer_id: must not be empty");
  if (block_ms < 0) return InvalidArgumentError("block_ms: must not be negative");
  const auto wait_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(block_ms);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    const std::int64_t now = options_.clock();
    PurgeLocked(now);
    if (auto claimed = ClaimLocked(consumer_id, now)) return claimed;
    ++waiting_;
    const std::cv_status waited = queue_cv_.wait_until(lock, wait_until);
    --waiting_;
    if (waited == std::cv_status::timeout) {
      std::optional<ClaimedJob> last = ClaimLocked(consumer_id, options_.clock());
      if (last) return last;
      return std::optional<ClaimedJob>();
    }
  }
}

Status MemoryJobStore::MarkRunning(const DeliveryHandle& handle, const std::string& executor) {
  UNMASK_RETURN_IF_ERROR(CheckHandle(handle.job_id, handle));
  std::lock_guard<std::mutex> lock(mu_);
  UNMASK_ASSIGN_OR_RETURN(Job * job, FindDeliveryLocked(handle));
  const std::int64_t now = options_.clock();
  job->record.executor = executor;
  job->record.started_unix_ms = now;
  job->last_seen_ms = now;
  return OkStatus();
}

Status MemoryJobStore::Heartbeat(const DeliveryHandle& handle) {
  UNMASK_RETURN_IF_ERROR(CheckHandle(handle.job_id, handle));
  std::lock_guard<std::mutex> lock(mu_);
  UNMASK_ASSIGN_OR_RETURN(Job * job, FindDeliveryLocked(handle));
  job->last_seen_ms = options_.clock();
  return OkStatus();
}

Status MemoryJobStore::Complete(const std::string& job_id, const DeliveryHandle& handle,
                                const std::string& result) {
  return Finish(job_id, handle, Outcome{JobState::kSucceeded, result, OkStatus(), ""});
}

Status MemoryJobStore::Fail(const std::string& job_id, const DeliveryHandle& handle,
                            const Status& error) {
  return Finish(job_id, handle, Outcome{JobState::kFailed, "", error, ""});
}

Status MemoryJobStore::ConfirmCancelled(const std::string& job_id, const DeliveryHandle& handle) {
  return Finish(job_id, handle, Outcome{JobState::kCancelled, "", OkStatus(), ""});
}

Status MemoryJobStore::Finish(const std::string& job_id, const DeliveryHandle& handle,
                              const Outcome& outcome) {
  UNMASK_ASSIGN_OR_RETURN(OutcomeFields fields, FieldsOf(outcome));
  UNMASK_RETURN_IF_ERROR(CheckHandle(job_id, handle));
  std::lock_guard<std::mutex> lock(mu_);
  UNMASK_ASSIGN_OR_RETURN(Job * job, FindDeliveryLocked(handle));
  job->record.result = std::move(fields.result);
  job->record.error = std::move(fields.error);
  job->record.error_code = fields.error_code;
  job->record.error_detail = std::move(fields.error_detail);
  if (!outcome.final_event.empty()) job->events.push_back(outcome.final_event);  // FinishLocked wakes the readers
  FinishLocked(*job, outcome.state, options_.clock());
  return OkStatus();
}

StatusOr<JobState> MemoryJobStore::Requeue(const DeliveryHandle& handle) {
  UNMASK_RETURN_IF_ERROR(CheckHandle(handle.job_id, handle));
  std::lock_guard<std::mutex> lock(mu_);
  UNMASK_ASSIGN_OR_RETURN(Job * job, FindDeliveryLocked(handle));
  const std::int64_t now = options_.clock();
  ++job->record.attempts;
  if (job->record.cancel_requested) {
    job->record.error = "cancelled while running";
    FinishLocked(*job, JobState::kCancelled, now);
  } else {
    EnqueueLocked(*job, now);
  }
  return job->record.state;
}

StatusOr<JobState> MemoryJobStore::Cancel(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::int64_t now = options_.clock();
  PurgeLocked(now);
  UNMASK_ASSIGN_OR_RETURN(Job * job, FindLocked(job_id));
  if (job->record.state == JobState::kQueued) {
    job->record.error = "cancelled while queued";
    FinishLocked(*job, JobState::kCancelled, now);
  } else if (job->record.state == JobState::kRunning) {
    job->record.cancel_requested = true;
  }
  return job->record.state;
}

StatusOr<ReclaimReport> MemoryJobStore::ReclaimStale(const std::string& consumer_id,
                                                     std::int64_t min_idle_ms, int max_attempts) {
  if (consumer_id.empty()) return InvalidArgumentError("consumer_id: must not be empty");
  UNMASK_RETURN_IF_ERROR(CheckReclaimArgs(min_idle_ms, max_attempts));
  std::lock_guard<std::mutex> lock(mu_);
  const std::int64_t now = options_.clock();
  PurgeLocked(now);
  ReclaimReport report;
  // Copy: requeueing and finishing edit running_.
  const std::vector<std::string> running(running_.begin(), running_.end());
  for (const std::string& job_id : running) {
    Job& job = jobs_.at(job_id);
    if (now - job.last_seen_ms < min_idle_ms) continue;
    ++job.record.attempts;
    if (job.record.cancel_requested) {
      job.record.error = "cancelled while running";
      FinishLocked(job, JobState::kCancelled, now);
      report.cancelled.push_back(job_id);
    } else if (job.record.attempts >= max_attempts) {
      job.record.error = "executor lost " + std::to_string(job.record.attempts) +
                         " times (max_attempts " + std::to_string(max_attempts) + ")";
      FinishLocked(job, JobState::kDead, now);
      report.dead.push_back(job_id);
    } else {
      EnqueueLocked(job, now);
      report.requeued.push_back(job_id);
    }
  }
  return report;
}

}  // namespace unmask::jobs
