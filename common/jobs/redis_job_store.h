// RedisJobStore: the durable JobStore, shared by every scheduler replica that points at the
// same Redis. Key layout and the scripts that change it: redis_scripts.h; record encoding:
// job_hash_codec.h.
//
// Why one stream per priority level (plus a sorted-set index), not one stream:
//   A consumer group delivers a stream strictly in entry order, so a single stream cannot put
//   a later high-priority job ahead of earlier low-priority ones. With one stream per level
//   (21 levels, -10..10) each stream is FIFO by construction, and the consumer group still
//   gives what the design needs: a delivered job stays in the pending list until its outcome
//   is stored and XACKed, XAUTOCLAIM finds deliveries whose replica died, and two replicas
//   reading the same group never get the same entry. The sorted set P:jobs:queued mirrors the
//   queued jobs in claim order (priority, then submit order): the claim script reads its first
//   member to know which stream to XREADGROUP from (one stream read per claim instead of 21),
//   and it answers QueueDepth (ZCARD) and Position (ZRANK) in O(log n).
//
// Atomicity: every state change is one Lua script (HSET of the record + XADD on submit; XACK
// only after the outcome is stored on complete; ...), so a crash of a replica or of Redis
// between two steps cannot leave a job stored but not queued, or acknowledged but without a
// result. What survives a Redis restart is what Redis persisted: run it with AOF
// (appendonly yes) for "no accepted job is lost".
//
// Blocking claims: when nothing is queued the claim script returns each priority stream's last
// entry id, and the client waits with XREAD BLOCK on all of them from those ids; any XADD after
// the script ran wakes it (no lost wake-ups), and it then runs the claim script again.
//
// Clocks: deadlines and record timestamps use the calling replica's clock (options.store.clock);
// idle times for the reaper are Redis's own (XAUTOCLAIM), so replicas need roughly synchronized
// clocks only for deadlines.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/jobs/job_store.h"
#include "common/jobs/redis_client.h"
#include "common/jobs/redis_scripts.h"

namespace unmask::jobs {

struct RedisJobStoreOptions {
  RedisEndpoint endpoint;
  std::string key_prefix = "unmask";
  std::string consumer_group = "schedulers";
  int max_idle_connections = 8;  // pool size kept open; busy callers may open more
  JobStoreOptions store;
};

class RedisJobStore final : public JobStore {
 public:
  // Connects, creates the consumer group on every priority stream (idempotent) and loads the
  // scripts. Unavailable when Redis cannot be reached.
  static StatusOr<std::unique_ptr<RedisJobStore>> Connect(RedisJobStoreOptions options);

  std::string Describe() const override;
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

  // Key names, for tests and operators.
  std::string JobKey(const std::string& job_id) const;
  std::string EventsKey(const std::string& job_id) const;
  std::string PriorityStreamKey(int priority) const;
  std::string DeadLetterKey() const;
  RedisClient& client() { return client_; }

 private:
  explicit RedisJobStore(RedisJobStoreOptions options);
  Status EnsureGroups();
  // Runs a script (EVALSHA, falling back to EVAL after a server restart emptied the script
  // cache; recreating the consumer groups when a server without persistence lost them).
  StatusOr<RedisReplyPtr> RunScript(RedisScriptId id, std::int64_t now,
                                    const std::vector<std::string>& args);
  StatusOr<std::optional<ClaimedJob>> ClaimOnce(const std::string& consumer_id,
                                                std::vector<std::string>* last_ids);
  Status CheckOwnHandle(const std::string& job_id, const DeliveryHandle& handle) const;
  Status Touch(const DeliveryHandle& handle, const std::string* executor);
  StatusOr<std::vector<JobRecord>> FetchRecords(const std::vector<std::string>& ids,
                                                std::vector<std::string>* missing);
  // ReadEvents' parts: the state after a wait that brought nothing, and the entries read.
  StatusOr<EventBatch> WaitedInVain(const std::string& job_id, EventBatch batch);
  StatusOr<EventBatch> ParseEventEntries(const std::string& job_id, const redisReply* entries,
                                         EventBatch batch);

  const RedisJobStoreOptions options_;
  RedisClient client_;
  std::vector<std::string> script_shas_;
};

}  // namespace unmask::jobs
