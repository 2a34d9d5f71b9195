// RedisJobStore: reads (Get, List, queue depth and position, cancel flag) and the event log.
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <tuple>

#include "common/jobs/job_hash_codec.h"
#include "common/jobs/redis_job_store.h"
#include "common/jobs/redis_outcomes.h"

namespace unmask::jobs {
namespace {

constexpr JobState kAllStates[] = {JobState::kQueued, JobState::kRunning,   JobState::kSucceeded,
                                   JobState::kFailed, JobState::kCancelled, JobState::kExpired,
                                   JobState::kDead};

// A read of a job's hash that Redis refused: a corrupt record only when the key holds another
// type (WRONGTYPE, DataLoss). Any other refusal says something about the server, not the record
// (LOADING while a restarted server reads its AOF): passed on as it is (Unavailable), so that
// callers try again instead of giving the job up.
Status NotAHash(const std::string& job_id, const Status& status) {
  if (status.code() != StatusCode::kDataLoss) return status;
  return DataLossError("job " + job_id + ": stored record is not a hash (" + status.message() +
                       ")");
}

}  // namespace

StatusOr<std::vector<JobRecord>> RedisJobStore::FetchRecords(const std::vector<std::string>& ids,
                                                             std::vector<std::string>* missing) {
  std::vector<std::vector<std::string>> commands;
  for (const std::string& id : ids) commands.push_back({"HGETALL", JobKey(id)});
  UNMASK_ASSIGN_OR_RETURN(std::vector<RedisReplyPtr> replies, client_.Pipeline(commands));
  std::vector<JobRecord> records;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const redisReply* reply = replies[i].get();
    if (IsErrorReply(reply)) return NotAHash(ids[i], ErrorReplyStatus("HGETALL", reply));
    if (ReplyArraySize(reply) == 0) {
      missing->push_back(ids[i]);
      continue;
    }
    UNMASK_ASSIGN_OR_RETURN(HashFields fields, ToHashFields(reply, "HGETALL"));
    UNMASK_ASSIGN_OR_RETURN(JobRecord record, DecodeJobHash(ids[i], fields));
    records.push_back(std::move(record));
  }
  return records;
}

StatusOr<JobRecord> RedisJobStore::Get(const std::string& job_id) {
  if (!IsValidJobId(job_id)) return NotFoundError("job " + job_id + ": not found");
  std::vector<std::string> missing;
  UNMASK_ASSIGN_OR_RETURN(std::vector<JobRecord> records, FetchRecords({job_id}, &missing));
  if (records.empty()) return NotFoundError("job " + job_id + ": not found");
  return std::move(records[0]);
}

StatusOr<bool> RedisJobStore::CancelRequested(const std::string& job_id) {
  if (!IsValidJobId(job_id)) return NotFoundError("job " + job_id + ": not found");
  UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr reply,
                          client_.Command({"HMGET", JobKey(job_id), "state", "cancel_requested"}));
  if (IsErrorReply(reply.get())) return NotAHash(job_id, ErrorReplyStatus("HMGET", reply.get()));
  if (IsNilReply(ReplyElement(reply.get(), 0)))
    return NotFoundError("job " + job_id + ": not found");
  return ReplyString(ReplyElement(reply.get(), 1)) == "1";
}

StatusOr<std::vector<JobRecord>> RedisJobStore::List(const ListFilter& filter) {
  UNMASK_RETURN_IF_ERROR(CheckListFilter(filter));
  std::vector<JobState> states;
  if (filter.state) {
    states.push_back(*filter.state);
  } else {
    states.assign(std::begin(kAllStates), std::end(kAllStates));
  }
  // Index entries of jobs removed after their TTL are dropped as they are met; a few rounds
  // refill the page when some were.
  for (int round = 0;; ++round) {
    std::vector<std::vector<std::string>> commands;
    for (JobState s : states) {
      commands.push_back({"ZREVRANGE", options_.key_prefix + ":jobs:state:" + JobStateName(s), "0",
                          std::to_string(filter.limit - 1), "WITHSCORES"});
    }
    UNMASK_ASSIGN_OR_RETURN(std::vector<RedisReplyPtr> replies, client_.Pipeline(commands));
    std::vector<std::tuple<double, std::string, JobState>> candidates;
    for (std::size_t i = 0; i < replies.size(); ++i) {
      const redisReply* r = replies[i].get();
      if (IsErrorReply(r)) return ErrorReplyStatus("ZREVRANGE", r);
      for (std::size_t j = 0; j + 1 < ReplyArraySize(r); j += 2) {
        candidates.emplace_back(std::strtod(ReplyString(r->element[j + 1]).c_str(), nullptr),
                                ReplyString(r->element[j]), states[i]);
      }
    }
    // Newest first; ties by id descending, as ZREVRANGE orders one index.
    std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
      return std::tie(std::get<0>(a), std::get<1>(a)) > std::tie(std::get<0>(b), std::get<1>(b));
    });
    if (candidates.size() > static_cast<std::size_t>(filter.limit)) candidates.resize(filter.limit);
    std::vector<std::string> ids;
    for (const auto& c : candidates) ids.push_back(std::get<1>(c));
    std::vector<std::string> missing;
    UNMASK_ASSIGN_OR_RETURN(std::vector<JobRecord> records, FetchRecords(ids, &missing));
    if (missing.empty() || round == 2) return records;
    std::vector<std::vector<std::string>> cleanup;
    for (const std::string& id : missing) {
      for (JobState s : kAllStates) {
        cleanup.push_back({"ZREM", options_.key_prefix + ":jobs:state:" + JobStateName(s), id});
      }
    }
    UNMASK_ASSIGN_OR_RETURN(std::vector<RedisReplyPtr> ignored, client_.Pipeline(cleanup));
  }
}

StatusOr<std::int64_t> RedisJobStore::QueueDepth() {
  UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr reply,
                          client_.Command({"ZCARD", options_.key_prefix + ":jobs:queued"}));
  if (IsErrorReply(reply.get())) return ErrorReplyStatus("ZCARD", reply.get());
  if (reply->type != REDIS_REPLY_INTEGER) return UnexpectedReply("ZCARD", "not an integer");
  return static_cast<std::int64_t>(reply->integer);
}

StatusOr<std::int64_t> RedisJobStore::Position(const std::string& job_id) {
  if (!IsValidJobId(job_id)) return NotFoundError("job " + job_id + ": not found");
  UNMASK_ASSIGN_OR_RETURN(std::vector<RedisReplyPtr> replies,
                          client_.Pipeline({{"ZRANK", options_.key_prefix + ":jobs:queued", job_id},
                                            {"HGET", JobKey(job_id), "state"}}));
  if (IsErrorReply(replies[0].get())) return ErrorReplyStatus("ZRANK", replies[0].get());
  if (IsErrorReply(replies[1].get())) {
    return NotAHash(job_id, ErrorReplyStatus("HGET", replies[1].get()));
  }
  if (IsNilReply(replies[1].get())) return NotFoundError("job " + job_id + ": not found");
  const std::string state = ReplyString(replies[1].get());
  if (state != "queued" || replies[0]->type != REDIS_REPLY_INTEGER) {
    return FailedPreconditionError("job " + job_id + ": not queued (" + state + ")");
  }
  return static_cast<std::int64_t>(replies[0]->integer);
}

StatusOr<std::int64_t> RedisJobStore::AppendEvent(const std::string& job_id,
                                                  const std::string& event) {
  if (!IsValidJobId(job_id)) return NotFoundError("job " + job_id + ": not found");
  UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr reply, RunScript(RedisScriptId::kAppendEvent,
                                                         options_.store.clock(), {job_id, event}));
  UNMASK_ASSIGN_OR_RETURN(std::string word, OutcomeWord(reply.get(), "append-event"));
  if (word == "notfound") return NotFoundError("job " + job_id + ": not found");
  if (word == "closed") {
    return FailedPreconditionError("job " + job_id + ": event log closed (job is " +
                                   OutcomeText(reply.get(), 1) + ")");
  }
  const redisReply* index = ReplyElement(reply.get(), 1);
  if (word != "ok" || !index || index->type != REDIS_REPLY_INTEGER) {
    return UnexpectedReply("EVALSHA append-event", "no index");
  }
  return static_cast<std::int64_t>(index->integer);
}

StatusOr<EventBatch> RedisJobStore::ReadEvents(const std::string& job_id, std::int64_t from_index,
                                               std::int64_t block_ms) {
  if (from_index < 0) return InvalidArgumentError("from_index: must not be negative");
  if (block_ms < 0) return InvalidArgumentError("block_ms: must not be negative");
  if (!IsValidJobId(job_id)) return NotFoundError("job " + job_id + ": not found");
  const std::string key = EventsKey(job_id);
  const std::string count = std::to_string(kMaxEventBatch);
  EventBatch batch;
  batch.next_index = from_index;
  RedisReplyPtr woke;
  if (from_index > 0 && block_ms > 0) {
    // A reader past the job's first events follows a job it has seen: XREAD answers at once
    // when the next events are there (a finished job's end marker included), so a stream of
    // steps costs one command each. The job's state is looked at only when the wait ran out.
    UNMASK_ASSIGN_OR_RETURN(
        woke, client_.Command({"XREAD", "COUNT", count, "BLOCK", std::to_string(block_ms),
                               "STREAMS", key, "0-" + std::to_string(from_index)},
                              block_ms));
    if (IsErrorReply(woke.get())) return ErrorReplyStatus("XREAD", woke.get());
    if (IsNilReply(woke.get())) return WaitedInVain(job_id, std::move(batch));
    return ParseEventEntries(job_id, ReplyElement(ReplyElement(woke.get(), 0), 1), std::move(batch));
  }
  // Event i is entry 0-(i+1): XRANGE from 0-(from+1), or XREAD after 0-from.
  UNMASK_ASSIGN_OR_RETURN(
      RedisReplyPtr range,
      client_.Command({"XRANGE", key, "0-" + std::to_string(from_index + 1), "+", "COUNT", count}));
  if (IsErrorReply(range.get())) return ErrorReplyStatus("XRANGE", range.get());
  const redisReply* entries = range.get();
  if (ReplyArraySize(entries) == 0) {
    // Nothing yet: a finished job has nothing more to give; otherwise wait. The end marker a
    // finishing job appends wakes the XREAD, so checking the state first loses nothing.
    UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr state,
                            client_.Command({"HGET", JobKey(job_id), "state"}));
    if (IsErrorReply(state.get())) return NotAHash(job_id, ErrorReplyStatus("HGET", state.get()));
    if (IsNilReply(state.get())) return NotFoundError("job " + job_id + ": not found");
    std::optional<JobState> parsed = ParseJobState(ReplyString(state.get()));
    if (parsed && IsTerminal(*parsed)) {
      batch.finished = true;
      return batch;
    }
    if (block_ms == 0) return batch;
    UNMASK_ASSIGN_OR_RETURN(
        woke, client_.Command({"XREAD", "COUNT", count, "BLOCK", std::to_string(block_ms),
                               "STREAMS", key, "0-" + std::to_string(from_index)},
                              block_ms));
    if (IsErrorReply(woke.get())) return ErrorReplyStatus("XREAD", woke.get());
    if (IsNilReply(woke.get())) return batch;  // timed out
    // XREAD answers [[key, [entries]]].
    entries = ReplyElement(ReplyElement(woke.get(), 0), 1);
  }
  return ParseEventEntries(job_id, entries, std::move(batch));
}

// No event came within the wait: finished (a job whose end marker the reader has already passed),
// gone, or simply still running.
StatusOr<EventBatch> RedisJobStore::WaitedInVain(const std::string& job_id, EventBatch batch) {
  UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr state, client_.Command({"HGET", JobKey(job_id), "state"}));
  if (IsErrorReply(state.get())) return NotAHash(job_id, ErrorReplyStatus("HGET", state.get()));
  if (IsNilReply(state.get())) return NotFoundError("job " + job_id + ": not found");
  const std::optional<JobState> parsed = ParseJobState(ReplyString(state.get()));
  batch.finished = parsed && IsTerminal(*parsed);
  return batch;
}

// Entries 0-k of a job's event log (event k-1 each), up to its end marker, after `batch`'s.
StatusOr<EventBatch> RedisJobStore::ParseEventEntries(const std::string& job_id, const redisReply* entries,
                                                      EventBatch batch) {
  for (std::size_t i = 0; i < ReplyArraySize(entries); ++i) {
    const redisReply* entry = entries->element[i];
    const std::string id = ReplyString(ReplyElement(entry, 0));
    const redisReply* fields = ReplyElement(entry, 1);
    std::int64_t k = 0;
    const char* digits = id.data() + 2;
    const char* end = id.data() + id.size();
    if (id.rfind("0-", 0) != 0 || std::from_chars(digits, end, k).ptr != end || k < 1 ||
        ReplyArraySize(fields) < 2) {
      return DataLossError("job " + job_id + ": event log entry '" + id + "' is malformed");
    }
    batch.next_index = k;  // entry 0-k holds event k-1
    if (ReplyString(fields->element[0]) == "end") {
      batch.finished = true;
      break;
    }
    batch.events.push_back(ReplyString(fields->element[1]));
  }
  return batch;
}

}  // namespace unmask::jobs
