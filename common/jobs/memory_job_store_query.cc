// MemoryJobStore: reads (Get, List, queue depth and position) and the per-job event log.
#include <algorithm>
#include <chrono>
#include <iterator>

#include "common/jobs/memory_job_store.h"

namespace unmask::jobs {

StatusOr<bool> MemoryJobStore::CancelRequested(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  PurgeLocked(options_.clock());
  UNMASK_ASSIGN_OR_RETURN(Job * job, FindLocked(job_id));
  return job->record.cancel_requested;
}

StatusOr<JobRecord> MemoryJobStore::Get(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  PurgeLocked(options_.clock());
  UNMASK_ASSIGN_OR_RETURN(Job * job, FindLocked(job_id));
  return job->record;
}

StatusOr<std::vector<JobRecord>> MemoryJobStore::List(const ListFilter& filter) {
  UNMASK_RETURN_IF_ERROR(CheckListFilter(filter));
  std::lock_guard<std::mutex> lock(mu_);
  PurgeLocked(options_.clock());
  std::vector<const JobRecord*> matches;
  for (const auto& [id, job] : jobs_) {
    if (!filter.state || job.record.state == *filter.state) matches.push_back(&job.record);
  }
  // Same order as the Redis store's state indexes read newest first: time, then id, descending.
  auto newer = [](const JobRecord* a, const JobRecord* b) {
    if (a->updated_unix_ms != b->updated_unix_ms) return a->updated_unix_ms > b->updated_unix_ms;
    return a->job_id > b->job_id;
  };
  const std::size_t n = std::min<std::size_t>(matches.size(), filter.limit);
  std::partial_sort(matches.begin(), matches.begin() + n, matches.end(), newer);
  std::vector<JobRecord> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(*matches[i]);
  return out;
}

StatusOr<std::int64_t> MemoryJobStore::QueueDepth() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<std::int64_t>(queue_.size());
}

StatusOr<std::int64_t> MemoryJobStore::Position(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  PurgeLocked(options_.clock());
  UNMASK_ASSIGN_OR_RETURN(Job * job, FindLocked(job_id));
  if (job->record.state != JobState::kQueued) {
    return FailedPreconditionError("job " + job_id + ": not queued (" +
                                   JobStateName(job->record.state) + ")");
  }
  // Linear in the position; an in-process queue stays small enough for that.
  auto it = queue_.find(KeyOf(*job));
  return static_cast<std::int64_t>(std::distance(queue_.begin(), it));
}

StatusOr<std::int64_t> MemoryJobStore::AppendEvent(const std::string& job_id,
                                                   const std::string& event) {
  std::lock_guard<std::mutex> lock(mu_);
  PurgeLocked(options_.clock());
  UNMASK_ASSIGN_OR_RETURN(Job * job, FindLocked(job_id));
  if (IsTerminal(job->record.state)) {
    return FailedPreconditionError("job " + job_id + ": event log closed (job is " +
                                   JobStateName(job->record.state) + ")");
  }
  job->events.push_back(event);
  job->events_cv->notify_all();
  return static_cast<std::int64_t>(job->events.size() - 1);
}

StatusOr<EventBatch> MemoryJobStore::ReadEvents(const std::string& job_id, std::int64_t from_index,
                                                std::int64_t block_ms) {
  if (from_index < 0) return InvalidArgumentError("from_index: must not be negative");
  if (block_ms < 0) return InvalidArgumentError("block_ms: must not be negative");
  const auto wait_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(block_ms);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    PurgeLocked(options_.clock());
    UNMASK_ASSIGN_OR_RETURN(Job * job, FindLocked(job_id));
    const auto size = static_cast<std::int64_t>(job->events.size());
    const bool terminal = IsTerminal(job->record.state);
    if (from_index < size || terminal) {
      EventBatch batch;
      const std::int64_t end = std::min<std::int64_t>(size, from_index + kMaxEventBatch);
      for (std::int64_t i = from_index; i < end; ++i) batch.events.push_back(job->events[i]);
      batch.next_index = std::max(end, from_index);
      batch.finished = terminal && end >= size;
      return batch;
    }
    const std::shared_ptr<std::condition_variable> cv = job->events_cv;
    ++waiting_;
    const std::cv_status waited = cv->wait_until(lock, wait_until);
    --waiting_;
    if (waited == std::cv_status::timeout) {
      // One last look, so an event that raced the timeout is not reported as a timeout.
      UNMASK_ASSIGN_OR_RETURN(Job * again, FindLocked(job_id));
      if (static_cast<std::int64_t>(again->events.size()) > from_index ||
          IsTerminal(again->record.state)) {
        continue;
      }
      EventBatch empty;
      empty.next_index = from_index;
      return empty;
    }
  }
}

std::int64_t MemoryJobStore::WaitingCallers() {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_;
}

std::optional<std::int64_t> MemoryJobStore::ExpiresAtMs(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  PurgeLocked(options_.clock());
  auto it = jobs_.find(job_id);
  if (it == jobs_.end() || it->second.expires_at_ms == 0) return std::nullopt;
  return it->second.expires_at_ms;
}

}  // namespace unmask::jobs
