// RedisJobStore: connection set-up, script calls, submit, claim and the delivery lifecycle.
// Reads and the event log are in redis_job_store_query.cc.
#include "common/jobs/redis_job_store.h"

#include <chrono>

#include "common/jobs/job_hash_codec.h"
#include "common/jobs/redis_outcomes.h"

namespace unmask::jobs {
namespace {

// XAUTOCLAIM page size: bounds how long one reclaim script holds Redis.
constexpr int kReclaimPage = 100;
// Pages per stream per ReclaimStale call; the rest waits for the next pass.
constexpr int kMaxReclaimPages = 100;

}  // namespace

RedisJobStore::RedisJobStore(RedisJobStoreOptions options)
    : options_(std::move(options)), client_(options_.endpoint, options_.max_idle_connections) {}

StatusOr<std::unique_ptr<RedisJobStore>> RedisJobStore::Connect(RedisJobStoreOptions options) {
  if (options.key_prefix.empty()) return InvalidArgumentError("key_prefix: must not be empty");
  if (options.consumer_group.empty()) {
    return InvalidArgumentError("consumer_group: must not be empty");
  }
  if (options.store.result_ttl_ms < 1 || options.store.idempotency_ttl_ms < 1) {
    return InvalidArgumentError("result_ttl_ms and idempotency_ttl_ms: must be at least 1");
  }
  std::unique_ptr<RedisJobStore> store(new RedisJobStore(std::move(options)));
  UNMASK_RETURN_IF_ERROR(store->EnsureGroups());
  for (int i = 0; i < kRedisScriptCount; ++i) {
    const auto id = static_cast<RedisScriptId>(i);
    UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr reply,
                            store->client_.Command({"SCRIPT", "LOAD", RedisScriptBody(id)}));
    if (IsErrorReply(reply.get())) {
      return ErrorReplyStatus(std::string("SCRIPT LOAD ") + RedisScriptName(id), reply.get());
    }
    store->script_shas_.push_back(ReplyString(reply.get()));
  }
  return store;
}

std::string RedisJobStore::Describe() const {
  const RedisEndpoint& e = options_.endpoint;
  const std::string tls = !e.tls.enabled ? "plaintext" : e.tls.cert_file.empty() ? "TLS" : "mutual TLS";
  return "Redis job store at " + e.host + ":" + std::to_string(e.port) + " (" + tls + ", db " +
         std::to_string(e.db) + ", keys " + options_.key_prefix + ":*, group " +
         options_.consumer_group +
         "): jobs survive a scheduler restart, and a Redis restart when Redis persists (AOF)";
}

std::string RedisJobStore::JobKey(const std::string& job_id) const {
  return options_.key_prefix + ":job:" + job_id;
}
std::string RedisJobStore::EventsKey(const std::string& job_id) const {
  return JobKey(job_id) + ":events";
}
std::string RedisJobStore::PriorityStreamKey(int priority) const {
  return options_.key_prefix + ":jobs:p" + std::to_string(priority);
}
std::string RedisJobStore::DeadLetterKey() const { return options_.key_prefix + ":jobs:dead"; }

Status RedisJobStore::EnsureGroups() {
  std::vector<std::vector<std::string>> commands;
  for (int p = kMaxPriority; p >= kMinPriority; --p) {
    commands.push_back(
        {"XGROUP", "CREATE", PriorityStreamKey(p), options_.consumer_group, "0", "MKSTREAM"});
  }
  UNMASK_ASSIGN_OR_RETURN(std::vector<RedisReplyPtr> replies, client_.Pipeline(commands));
  for (const RedisReplyPtr& reply : replies) {
    if (IsErrorReply(reply.get()) && ReplyString(reply.get()).rfind("BUSYGROUP", 0) != 0) {
      return ErrorReplyStatus("XGROUP CREATE", reply.get());
    }
  }
  return OkStatus();
}

StatusOr<RedisReplyPtr> RedisJobStore::RunScript(RedisScriptId id, std::int64_t now,
                                                 const std::vector<std::string>& args) {
  const int index = static_cast<int>(id);
  std::vector<std::string> argv = {"EVALSHA",
                                   script_shas_[index],
                                   "0",
                                   options_.key_prefix,
                                   options_.consumer_group,
                                   std::to_string(now),
                                   std::to_string(options_.store.result_ttl_ms)};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string name = std::string("EVALSHA ") + RedisScriptName(id);
  bool recreated_groups = false;
  for (;;) {
    UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr reply, client_.Command(argv));
    if (!IsErrorReply(reply.get())) return reply;
    const std::string text = ReplyString(reply.get());
    if (text.rfind("NOSCRIPT", 0) == 0 && argv[0] == "EVALSHA") {
      argv[0] = "EVAL";  // the server restarted and lost its script cache; EVAL reloads it
      argv[1] = RedisScriptBody(id);
      continue;
    }
    if (text.find("NOGROUP") != std::string::npos && !recreated_groups) {
      recreated_groups = true;  // a server without persistence restarted empty
      UNMASK_RETURN_IF_ERROR(EnsureGroups());
      continue;
    }
    return ErrorReplyStatus(name, reply.get());
  }
}

StatusOr<SubmitResult> RedisJobStore::Submit(const JobRecord& record) {
  UNMASK_RETURN_IF_ERROR(ValidateNewJob(record));
  const std::string job_id = record.job_id.empty() ? NewJobId() : record.job_id;
  const std::int64_t now = options_.store.clock();
  std::vector<std::string> args = {job_id, record.idempotency_key,
                                   std::to_string(options_.store.idempotency_ttl_ms),
                                   std::to_string(record.priority)};
  for (auto& [field, value] : EncodeNewJob(record, job_id, now)) {
    args.push_back(field);
    args.push_back(value);
  }
  UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr reply, RunScript(RedisScriptId::kSubmit, now, args));
  UNMASK_ASSIGN_OR_RETURN(std::string word, OutcomeWord(reply.get(), "submit"));
  if (word == "ok") return SubmitResult{job_id, false};
  if (word == "duplicate") return SubmitResult{OutcomeText(reply.get(), 1), true};
  if (word == "exists") return AlreadyExistsError("job " + job_id + ": already exists");
  return InternalError("submit: unexpected script outcome '" + word + "'");
}

StatusOr<std::optional<ClaimedJob>> RedisJobStore::ClaimOnce(const std::string& consumer_id,
                                                             std::vector<std::string>* last_ids) {
  const std::int64_t now = options_.store.clock();
  UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr reply,
                          RunScript(RedisScriptId::kClaim, now, {consumer_id}));
  UNMASK_ASSIGN_OR_RETURN(std::string word, OutcomeWord(reply.get(), "claim"));
  if (word == "empty") {
    for (std::size_t i = 1; i < ReplyArraySize(reply.get()); ++i) {
      last_ids->push_back(OutcomeText(reply.get(), i));
    }
    return std::optional<ClaimedJob>();
  }
  if (word == "again") return std::optional<ClaimedJob>();
  if (word == "corrupt") {
    return DataLossError("job " + OutcomeText(reply.get(), 1) + ": " + OutcomeText(reply.get(), 2) +
                         "; moved to the dead letters");
  }
  if (word != "job") return InternalError("claim: unexpected script outcome '" + word + "'");

  DeliveryHandle handle{OutcomeText(reply.get(), 3), OutcomeText(reply.get(), 1),
                        OutcomeText(reply.get(), 2), consumer_id};
  StatusOr<JobRecord> record = [&]() -> StatusOr<JobRecord> {
    UNMASK_ASSIGN_OR_RETURN(HashFields fields,
                            ToHashFields(ReplyElement(reply.get(), 4), "EVALSHA claim"));
    return DecodeJobHash(handle.job_id, fields);
  }();
  if (!record.ok()) {
    // An unreadable job must not block the queue: bury it, report it, let the caller go on.
    StatusOr<RedisReplyPtr> buried =
        RunScript(RedisScriptId::kBury, options_.store.clock(),
                  {handle.job_id, handle.queue, handle.delivery_id, record.status().message()});
    if (!buried.ok()) return buried.status();
    return Status(record.status().code(),
                  record.status().message() + "; moved to the dead letters");
  }
  return std::optional<ClaimedJob>(ClaimedJob{std::move(record).value(), std::move(handle)});
}

StatusOr<std::optional<ClaimedJob>> RedisJobStore::Claim(const std::string& consumer_id,
                                                         std::int64_t block_ms) {
  if (consumer_id.empty()) return InvalidArgumentError("consumer_id: must not be empty");
  if (block_ms < 0) return InvalidArgumentError("block_ms: must not be negative");
  using Clock = std::chrono::steady_clock;
  const Clock::time_point give_up = Clock::now() + std::chrono::milliseconds(block_ms);
  for (;;) {
    std::vector<std::string> last_ids;
    UNMASK_ASSIGN_OR_RETURN(std::optional<ClaimedJob> claimed, ClaimOnce(consumer_id, &last_ids));
    if (claimed) return claimed;
    if (last_ids.empty()) continue;  // "again": leftovers were skipped, look once more
    const auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now()).count();
    if (remaining <= 0) return std::optional<ClaimedJob>();
    // Wait for any entry newer than what the claim script saw; then claim again.
    std::vector<std::string> argv = {"XREAD",  "COUNT", "1", "BLOCK", std::to_string(remaining),
                                     "STREAMS"};
    for (int p = kMaxPriority; p >= kMinPriority; --p) argv.push_back(PriorityStreamKey(p));
    if (last_ids.size() != static_cast<std::size_t>(kMaxPriority - kMinPriority + 1)) {
      return UnexpectedReply("EVALSHA claim", "wrong number of stream ids");
    }
    argv.insert(argv.end(), last_ids.begin(), last_ids.end());
    UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr woke, client_.Command(argv, remaining));
    if (IsErrorReply(woke.get())) return ErrorReplyStatus("XREAD", woke.get());
  }
}

Status RedisJobStore::CheckOwnHandle(const std::string& job_id,
                                     const DeliveryHandle& handle) const {
  UNMASK_RETURN_IF_ERROR(CheckHandle(job_id, handle));
  // The handle names the stream to XACK; refuse anything that is not one of ours.
  const std::string streams = options_.key_prefix + ":jobs:p";
  if (handle.queue.rfind(streams, 0) != 0 || handle.consumer.empty()) {
    return InvalidArgumentError("delivery handle: not from this Redis job store");
  }
  return OkStatus();
}

Status RedisJobStore::Complete(const std::string& job_id, const DeliveryHandle& handle,
                               const std::string& result) {
  return Finish(job_id, handle, Outcome{JobState::kSucceeded, result, OkStatus(), ""});
}

Status RedisJobStore::Fail(const std::string& job_id, const DeliveryHandle& handle,
                           const Status& error) {
  return Finish(job_id, handle, Outcome{JobState::kFailed, "", error, ""});
}

Status RedisJobStore::ConfirmCancelled(const std::string& job_id, const DeliveryHandle& handle) {
  return Finish(job_id, handle, Outcome{JobState::kCancelled, "", OkStatus(), ""});
}

Status RedisJobStore::Touch(const DeliveryHandle& handle, const std::string* executor) {
  UNMASK_RETURN_IF_ERROR(CheckOwnHandle(handle.job_id, handle));
  UNMASK_ASSIGN_OR_RETURN(
      RedisReplyPtr reply,
      RunScript(RedisScriptId::kTouch, options_.store.clock(),
                {handle.job_id, handle.queue, handle.delivery_id, handle.consumer,
                 executor ? *executor : "", executor ? "1" : "0"}));
  UNMASK_ASSIGN_OR_RETURN(std::string word, OutcomeWord(reply.get(), "touch"));
  if (word == "ok") return OkStatus();
  return DeliveryOutcomeStatus(word, reply.get(), handle.job_id, handle.delivery_id);
}

Status RedisJobStore::MarkRunning(const DeliveryHandle& handle, const std::string& executor) {
  return Touch(handle, &executor);
}

Status RedisJobStore::Heartbeat(const DeliveryHandle& handle) { return Touch(handle, nullptr); }

Status RedisJobStore::Finish(const std::string& job_id, const DeliveryHandle& handle,
                             const Outcome& outcome) {
  UNMASK_ASSIGN_OR_RETURN(OutcomeFields fields, FieldsOf(outcome));
  UNMASK_RETURN_IF_ERROR(CheckOwnHandle(job_id, handle));
  std::vector<std::string> args = {job_id, handle.queue, handle.delivery_id, JobStateName(outcome.state),
                                   fields.result, fields.error, outcome.final_event};
  for (auto& [name, value] : EncodeErrorDetail(fields.error_code, fields.error_detail)) {
    args.push_back(name);
    args.push_back(value);
  }
  UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr reply,
                          RunScript(RedisScriptId::kFinishDelivery, options_.store.clock(), args));
  UNMASK_ASSIGN_OR_RETURN(std::string word, OutcomeWord(reply.get(), "finish"));
  if (word == "ok") return OkStatus();
  return DeliveryOutcomeStatus(word, reply.get(), job_id, handle.delivery_id);
}

StatusOr<JobState> RedisJobStore::Requeue(const DeliveryHandle& handle) {
  UNMASK_RETURN_IF_ERROR(CheckOwnHandle(handle.job_id, handle));
  UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr reply,
                          RunScript(RedisScriptId::kRequeue, options_.store.clock(),
                                    {handle.job_id, handle.queue, handle.delivery_id}));
  UNMASK_ASSIGN_OR_RETURN(std::string word, OutcomeWord(reply.get(), "requeue"));
  if (word != "ok") {
    return DeliveryOutcomeStatus(word, reply.get(), handle.job_id, handle.delivery_id);
  }
  std::optional<JobState> state = ParseJobState(OutcomeText(reply.get(), 1));
  if (!state) return UnexpectedReply("EVALSHA requeue", "unknown state");
  return *state;
}

StatusOr<JobState> RedisJobStore::Cancel(const std::string& job_id) {
  if (!IsValidJobId(job_id)) return NotFoundError("job " + job_id + ": not found");
  UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr reply,
                          RunScript(RedisScriptId::kCancel, options_.store.clock(), {job_id}));
  UNMASK_ASSIGN_OR_RETURN(std::string word, OutcomeWord(reply.get(), "cancel"));
  if (word == "notfound") return NotFoundError("job " + job_id + ": not found");
  std::optional<JobState> state = ParseJobState(word);
  if (!state) {
    return DataLossError("job " + job_id +
                         ": stored record is corrupt: field 'state' is not a job state");
  }
  return *state;
}

StatusOr<ReclaimReport> RedisJobStore::ReclaimStale(const std::string& consumer_id,
                                                    std::int64_t min_idle_ms, int max_attempts) {
  if (consumer_id.empty()) return InvalidArgumentError("consumer_id: must not be empty");
  UNMASK_RETURN_IF_ERROR(CheckReclaimArgs(min_idle_ms, max_attempts));
  ReclaimReport report;
  auto collect = [](const redisReply* ids, std::vector<std::string>& out) {
    for (std::size_t i = 0; i < ReplyArraySize(ids); ++i)
      out.push_back(ReplyString(ids->element[i]));
  };
  for (int p = kMaxPriority; p >= kMinPriority; --p) {
    std::string cursor = "0-0";
    for (int page = 0; page < kMaxReclaimPages; ++page) {
      UNMASK_ASSIGN_OR_RETURN(
          RedisReplyPtr reply,
          RunScript(RedisScriptId::kReclaim, options_.store.clock(),
                    {consumer_id, PriorityStreamKey(p), cursor, std::to_string(min_idle_ms),
                     std::to_string(max_attempts), std::to_string(kReclaimPage)}));
      if (ReplyArraySize(reply.get()) != 4) {
        return UnexpectedReply("EVALSHA reclaim", "not a 4-element array");
      }
      collect(ReplyElement(reply.get(), 1), report.requeued);
      collect(ReplyElement(reply.get(), 2), report.dead);
      collect(ReplyElement(reply.get(), 3), report.cancelled);
      cursor = OutcomeText(reply.get(), 0);
      if (cursor == "0-0" || cursor.empty()) break;
    }
  }
  return report;
}

}  // namespace unmask::jobs
