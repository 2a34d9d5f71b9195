// The Lua scripts behind RedisJobStore. Each state change of a job is one script, so that it is
// atomic: the job hash, the priority streams, the consumer group's pending list, the queue
// index, the state indexes, the TTLs and the event log never disagree, whichever replica runs
// it and wherever it is interrupted.
//
// Key layout (P = key prefix, "unmask" by default):
//   P:job:<id>            hash, the record (job_hash_codec.h)
//   P:job:<id>:events     stream, the job's event log; entry ids are 0-1, 0-2, ... so that an
//                         event's index is its id - 1; a final entry with field "end" closes it
//   P:jobs:p<prio>        stream per priority level (-10..10), consumer group shared by all
//                         replicas; one entry per queued job ("job" = id)
//   P:jobs:queued         sorted set of queued job ids, score (kMaxPriority - prio) * 2^40 + seq:
//                         ZRANK is the queue position, ZCARD the depth, the first member tells
//                         the claim which priority stream to read
//   P:jobs:seq            counter giving submit / requeue order
//   P:jobs:state:<state>  sorted set per state, score = time the job entered it (List)
//   P:jobs:dead           the dead-letter stream (job, reason, attempts, at), capped ~100000
//   P:idem:<key>          idempotency key → job id, with its own TTL
//
// Calling convention: no KEYS (the store targets one Redis server or a primary, not Redis
// Cluster: the scripts derive keys from ids); ARGV[1] key prefix, ARGV[2] consumer group,
// ARGV[3] now (unix ms, the calling replica's clock; used for deadlines and timestamps),
// ARGV[4] result TTL in ms, then the script's own arguments (listed in redis_scripts.cc).
// Scripts report outcomes as arrays whose first element is a word ("ok", "notfound", "stale",
// ...), never as Redis errors, so that callers can tell "the job moved on" from "Redis failed".
#pragma once

#include <string>

namespace unmask::jobs {

enum class RedisScriptId {
  kSubmit,
  kClaim,
  kBury,
  kFinishDelivery,
  kTouch,
  kRequeue,
  kReclaim,
  kCancel,
  kAppendEvent,
};
inline constexpr int kRedisScriptCount = 9;

// Short name for error messages ("claim", "submit", ...).
const char* RedisScriptName(RedisScriptId id);
// The full script text (shared prelude + body).
const std::string& RedisScriptBody(RedisScriptId id);

}  // namespace unmask::jobs
