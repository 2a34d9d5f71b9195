// JobStore: the scheduler's durable job queue behind one interface (the seam between the
// scheduler and Redis). Two implementations with the same behaviour:
//   RedisJobStore   Redis Streams + consumer group; shared by several scheduler replicas and
//                   as durable as the Redis server is configured (AOF).
//   MemoryJobStore  in-process, for a single machine; jobs do not survive a restart.
//
// Delivery model (at-least-once, with fencing):
//   Claim hands a queued job to one consumer and returns a DeliveryHandle. The delivery stays
//   pending until Complete / Fail / ConfirmCancelled stores the outcome and acknowledges it, or
//   until Requeue / ReclaimStale puts the job back. Each handle is valid for one delivery only:
//   once the job was reclaimed and handed out again, the old handle is refused with
//   FailedPrecondition, so a slow executor that comes back cannot overwrite the new run's
//   outcome. A dispatcher whose job runs longer than the reaper's min_idle_ms calls Heartbeat.
//
// Every method is thread-safe and returns errors as Status; nothing throws. Common codes:
//   InvalidArgument  bad input (empty model, priority out of range, handle/job mismatch)
//   NotFound         no such job (never submitted, or removed after the result TTL)
//   FailedPrecondition  the job is not in a state that allows the call; stale handle
//   Unavailable      the backing store cannot be reached (names the command)
//   DataLoss         a stored record cannot be read (names the job and the field)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/jobs/job_record.h"
#include "common/util/status.h"

namespace unmask::jobs {

inline constexpr std::int64_t kDefaultResultTtlMs = 24LL * 3600 * 1000;
// Most events one ReadEvents call returns; the caller continues from next_index.
inline constexpr int kMaxEventBatch = 1000;

// Settings both implementations share.
struct JobStoreOptions {
  // How long a terminal job (record, result, events) stays readable after it finished.
  std::int64_t result_ttl_ms = kDefaultResultTtlMs;
  // How long an idempotency key maps to its job. A key whose job was already removed is free.
  std::int64_t idempotency_ttl_ms = kDefaultResultTtlMs;
  // Time for record timestamps and deadlines (and, in MemoryJobStore, delivery idle times).
  UnixClock clock = SystemClockMs;
};

struct SubmitResult {
  std::string job_id;
  bool duplicate = false;  // an earlier submit with the same idempotency key made this job
};

// One delivery of a job to a consumer. Treat as opaque; pass it back unchanged.
struct DeliveryHandle {
  std::string job_id;
  std::string queue;        // Redis: the priority stream's key; memory: "memory"
  std::string delivery_id;  // Redis: the stream entry id; memory: a delivery counter
  std::string consumer;
};

struct ClaimedJob {
  JobRecord record;  // state running, as stored at the moment of the claim
  DeliveryHandle handle;
};

// A delivery's terminal outcome together with the event that ends the job's event log.
struct Outcome {
  JobState state = JobState::kSucceeded;  // kSucceeded, kFailed or kCancelled
  std::string result;  // kSucceeded: the record's result
  // kFailed / kCancelled: the record's error, its message (OK or "" = a default text); a failure
  // keeps its code and detail too (JobRecord::error_code, error_detail).
  Status error;
  std::string final_event;  // "" = none
};

// What the record keeps of an outcome besides its state (the JobRecord fields of those names).
struct OutcomeFields {
  std::string result;
  std::string error;
  std::optional<StatusCode> error_code;
  ErrorDetail error_detail;
};

struct ListFilter {
  std::optional<JobState> state;  // empty = every state
  int limit = 50;                 // 1..1000
};

// What one ReclaimStale pass did with the deliveries it took over.
struct ReclaimReport {
  std::vector<std::string> requeued;   // back in the queue, attempts + 1
  std::vector<std::string> dead;       // attempts reached max_attempts: dead-lettered
  std::vector<std::string> cancelled;  // a cancel had been requested while it ran
};

struct EventBatch {
  std::vector<std::string> events;  // in append order, starting at the requested index
  std::int64_t next_index = 0;      // pass to the next ReadEvents call
  bool finished = false;            // the job is terminal and every event has been returned
};

class JobStore {
 public:
  virtual ~JobStore() = default;

  // One line for the start-up log: which store, where, and whether jobs survive a restart.
  virtual std::string Describe() const = 0;

  // Stores the job and queues it; when this returns OK the job is durable (as far as the store
  // is) and will be delivered. A submit whose idempotency key is already mapped to a live job
  // stores nothing and returns that job with duplicate = true. AlreadyExists when an explicit
  // job_id is taken.
  virtual StatusOr<SubmitResult> Submit(const JobRecord& record) = 0;

  // Hands the next job to `consumer_id`: highest priority first, FIFO within a priority.
  // Queued jobs whose deadline has passed are marked expired and skipped. Waits up to block_ms
  // (0 = do not wait) for a job; nullopt when none came. Two consumers (in this process or in
  // other replicas sharing the backend) never receive the same delivery.
  // DataLoss when the next job's record is unreadable: that job has then been moved to the
  // dead letters, and the caller may claim again.
  virtual StatusOr<std::optional<ClaimedJob>> Claim(const std::string& consumer_id,
                                                    std::int64_t block_ms) = 0;

  // Records which executor runs the claimed job and when it started.
  virtual Status MarkRunning(const DeliveryHandle& handle, const std::string& executor) = 0;
  // Tells the reaper the delivery is alive (resets its idle time).
  virtual Status Heartbeat(const DeliveryHandle& handle) = 0;

  // Terminal outcomes of a delivery. The outcome is stored (and the job's TTL set) before the
  // delivery is acknowledged, atomically in Redis. `job_id` must match the handle.
  virtual Status Complete(const std::string& job_id, const DeliveryHandle& handle,
                          const std::string& result) = 0;
  // Fail keeps the error's message, code and detail (an OK error = "failed", no code).
  virtual Status Fail(const std::string& job_id, const DeliveryHandle& handle,
                      const Status& error) = 0;
  // The dispatcher stopped a running job because CancelRequested said so.
  virtual Status ConfirmCancelled(const std::string& job_id, const DeliveryHandle& handle) = 0;
  // Complete / Fail / ConfirmCancelled (by outcome.state) that also appends outcome.final_event
  // to the job's event log in the same atomic step: the log ends with that event if and only if
  // this delivery's outcome was stored. (Appending it first and storing the outcome after let a
  // scheduler killed in between leave an end in the log of a job that then ran again.)
  // InvalidArgument for another state.
  virtual Status Finish(const std::string& job_id, const DeliveryHandle& handle,
                        const Outcome& outcome) = 0;

  // The executor died: the job goes back to the queue (behind the jobs of its priority that are
  // already queued) with attempts + 1. Returns the new state: queued, or cancelled when a cancel
  // was requested while it ran. No attempt limit here; ReclaimStale applies one.
  virtual StatusOr<JobState> Requeue(const DeliveryHandle& handle) = 0;

  // queued → cancelled at once; running → cancel_requested is set and the job keeps running
  // until the dispatcher confirms; terminal → unchanged. Returns the state after the call.
  virtual StatusOr<JobState> Cancel(const std::string& job_id) = 0;
  virtual StatusOr<bool> CancelRequested(const std::string& job_id) = 0;

  virtual StatusOr<JobRecord> Get(const std::string& job_id) = 0;
  // Jobs in the filter's state (or all), most recently changed first.
  virtual StatusOr<std::vector<JobRecord>> List(const ListFilter& filter) = 0;

  // Number of queued jobs.
  virtual StatusOr<std::int64_t> QueueDepth() = 0;
  // How many queued jobs run before this one (0 = next). FailedPrecondition when not queued.
  virtual StatusOr<std::int64_t> Position(const std::string& job_id) = 0;

  // The reaper: takes over every delivery idle for at least min_idle_ms (its consumer stopped
  // heart-beating), counts an attempt, and requeues the job, or moves it to the dead letters
  // once attempts reaches max_attempts (>= 1). Safe to run from several replicas at once: each
  // stale delivery is taken over by exactly one of them.
  virtual StatusOr<ReclaimReport> ReclaimStale(const std::string& consumer_id,
                                               std::int64_t min_idle_ms, int max_attempts) = 0;

  // Job events for Watch, readable from any replica. Events are opaque bytes; their index is
  // their position in the job's event log (0, 1, ...). AppendEvent returns the new event's
  // index; FailedPrecondition once the job is terminal (the log is closed).
  virtual StatusOr<std::int64_t> AppendEvent(const std::string& job_id,
                                             const std::string& event) = 0;
  // Events from from_index on, waiting up to block_ms when there are none yet. An empty batch
  // with finished = false means the wait timed out.
  virtual StatusOr<EventBatch> ReadEvents(const std::string& job_id, std::int64_t from_index,
                                          std::int64_t block_ms) = 0;
};

// Shared argument checks, so both implementations refuse the same inputs the same way.
Status CheckHandle(const std::string& job_id, const DeliveryHandle& handle);
Status CheckListFilter(const ListFilter& filter);
Status CheckReclaimArgs(std::int64_t min_idle_ms, int max_attempts);
// The outcome's state is one Finish takes; the fields its record keeps, with the default error
// text filled in.
StatusOr<OutcomeFields> FieldsOf(const Outcome& outcome);

}  // namespace unmask::jobs
