#include "common/jobs/redis_scripts.h"

#include <array>

#include "common/jobs/job_record.h"

namespace unmask::jobs {
namespace {

// Helpers every script shares. Lua 5.1 (Redis): no goto, numbers are doubles (exact below
// 2^53; num() prints them without an exponent).
constexpr const char* kPrelude = R"lua(
local P = ARGV[1]
local GROUP = ARGV[2]
local NOW = tonumber(ARGV[3])
local TTL = tonumber(ARGV[4])
local SEQ_SPAN = 1099511627776
local QUEUED = P .. ':jobs:queued'
local DEAD = P .. ':jobs:dead'
local TERMINAL = {succeeded = true, failed = true, cancelled = true, expired = true, dead = true}

local function num(x) return string.format('%.0f', x) end
local function jkey(id) return P .. ':job:' .. id end
local function evkey(id) return P .. ':job:' .. id .. ':events' end
local function stream(prio) return P .. ':jobs:p' .. prio end
local function sidx(state) return P .. ':jobs:state:' .. state end

local function valid_prio(s)
  if type(s) ~= 'string' or not string.match(s, '^%-?%d+$') then return nil end
  local p = tonumber(s)
  if p < MINP or p > MAXP then return nil end
  return p
end

local function set_state(id, old, new)
  redis.call('HSET', jkey(id), 'state', new, 'updated_ms', num(NOW))
  if old then redis.call('ZREM', sidx(old), id) end
  redis.call('ZADD', sidx(new), num(NOW), id)
end

local function ack(strm, eid)
  redis.call('XACK', strm, GROUP, eid)
  redis.call('XDEL', strm, eid)
end

local function enqueue(id, prio, old)
  local seq = redis.call('INCR', P .. ':jobs:seq')
  local eid = redis.call('XADD', stream(prio), '*', 'job', id)
  redis.call('HSET', jkey(id), 'seq', seq, 'entry', eid, 'consumer', '', 'executor', '',
             'started_ms', '0')
  redis.call('ZADD', QUEUED, num((MAXP - prio) * SEQ_SPAN + seq), id)
  set_state(id, old, 'queued')
end

-- Terminal transition: outcome fields first, then TTLs, then the end marker that wakes Watch.
local function finish(id, old, new, err)
  local jk = jkey(id)
  if err then redis.call('HSET', jk, 'error', err) end
  redis.call('HSET', jk, 'finished_ms', num(NOW), 'entry', '', 'consumer', '')
  redis.call('ZREM', QUEUED, id)
  set_state(id, old, new)
  redis.call('ZREMRANGEBYSCORE', sidx(new), '-inf', '(' .. num(NOW - TTL))
  -- One absolute expiry for the record and its log: two relative PEXPIREs can land a
  -- millisecond apart, and a reader could then find the log of a job whose record is gone.
  local t = redis.call('TIME')
  local at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + TTL
  redis.call('PEXPIREAT', jk, num(at))
  local ev = evkey(id)
  local n = redis.call('XLEN', ev)
  redis.call('XADD', ev, '0-' .. num(n + 1), 'end', '1')
  redis.call('PEXPIREAT', ev, num(at))
end

local function dead_letter(id, reason, attempts)
  redis.call('XADD', DEAD, 'MAXLEN', '~', '100000', '*', 'job', id, 'reason', reason,
             'attempts', tostring(attempts), 'at', num(NOW))
end

-- nil plus an outcome array unless eid is the job's current delivery.
local function current_delivery(id, eid)
  local h = redis.pcall('HMGET', jkey(id), 'state', 'entry')
  if h.err then return nil, {'corrupt', id, h.err} end
  if not h[1] then return nil, {'notfound'} end
  if h[1] ~= 'running' or h[2] ~= eid then return nil, {'stale', h[1]} end
  return true
end

-- A delivery ended without an outcome: count the attempt, then requeue, or finish the job as
-- cancelled (a cancel was requested meanwhile) or dead (attempt limit; 0 = none).
local function lose_delivery(id, strm, eid, max_attempts)
  local jk = jkey(id)
  local attempts = redis.call('HINCRBY', jk, 'attempts', 1)
  ack(strm, eid)
  local h = redis.call('HMGET', jk, 'cancel_requested', 'priority')
  if h[1] == '1' then
    finish(id, 'running', 'cancelled', 'cancelled while running')
    return 'cancelled'
  end
  local reason = nil
  if max_attempts > 0 and attempts >= max_attempts then
    reason = 'executor lost ' .. attempts .. ' times (max_attempts ' .. max_attempts .. ')'
  end
  local prio = valid_prio(h[2])
  if not reason and not prio then reason = "stored record is corrupt: field 'priority'" end
  if reason then
    dead_letter(id, reason, attempts)
    finish(id, 'running', 'dead', reason)
    return 'dead'
  end
  enqueue(id, prio, 'running')
  return 'queued'
end
)lua";

// ARGV[5] id, [6] idempotency key ('' = none), [7] its TTL ms, [8] priority (validated by the
// caller), [9..] the hash's field/value pairs.
constexpr const char* kSubmit = R"lua(
local id, idem, idem_ttl, prio = ARGV[5], ARGV[6], ARGV[7], tonumber(ARGV[8])
local ik = P .. ':idem:' .. idem
local took_key = false
if idem ~= '' then
  if redis.call('SET', ik, id, 'NX', 'PX', idem_ttl) then
    took_key = true
  else
    local existing = redis.call('GET', ik)
    if existing and redis.call('EXISTS', jkey(existing)) == 1 then
      return {'duplicate', existing}
    end
    -- The key outlived its job (removed after the result TTL): it is free again.
    redis.call('SET', ik, id, 'PX', idem_ttl)
    took_key = true
  end
end
if redis.call('EXISTS', jkey(id)) == 1 then
  if took_key then redis.call('DEL', ik) end
  return {'exists', id}
end
redis.call('HSET', jkey(id), unpack(ARGV, 9))
enqueue(id, prio, nil)
return {'ok', id}
)lua";

// ARGV[5] consumer. Returns {'job', stream, entry id, job id, HGETALL}, {'corrupt', id, why},
// {'again'} (skipped many leftovers; call again at once) or {'empty', last id of each priority
// stream from MAXP down to MINP} for the caller's blocking XREAD.
constexpr const char* kClaim = R"lua(
local consumer = ARGV[5]
local function last_ids()
  local out = {'empty'}
  for p = MAXP, MINP, -1 do
    local info = redis.pcall('XINFO', 'STREAM', stream(p))
    local last = '0-0'
    if type(info) == 'table' and not info.err then
      for i = 1, #info, 2 do
        if info[i] == 'last-generated-id' then last = info[i + 1] end
      end
    end
    out[#out + 1] = last
  end
  return out
end
for _ = 1, 100 do
  local top = redis.call('ZRANGE', QUEUED, 0, 0, 'WITHSCORES')
  if #top == 0 then return last_ids() end
  local strm = stream(MAXP - math.floor(tonumber(top[2]) / SEQ_SPAN))
  local r = redis.call('XREADGROUP', 'GROUP', GROUP, consumer, 'COUNT', 1, 'STREAMS', strm, '>')
  if not r then
    -- The index lists a job whose stream entry was removed by hand: give it a new entry so
    -- that it is not stranded, or drop it from the index when it is no longer queued.
    local id = top[1]
    local state = redis.pcall('HGET', jkey(id), 'state')
    if state == 'queued' then
      redis.call('HSET', jkey(id), 'entry', redis.call('XADD', strm, '*', 'job', id))
    else
      redis.call('ZREM', QUEUED, id)
    end
  else
    local eid, fields = r[1][2][1][1], r[1][2][1][2]
    local id = fields[2]
    if fields[1] ~= 'job' or type(id) ~= 'string' then
      ack(strm, eid)
    else
      local h = redis.pcall('HMGET', jkey(id), 'state', 'entry', 'deadline_ms')
      if h.err then
        ack(strm, eid)
        redis.call('ZREM', QUEUED, id)
        dead_letter(id, 'record is not a hash', 0)
        return {'corrupt', id, 'the record is not a hash (' .. h.err .. ')'}
      end
      local deadline = tonumber(h[3])
      if h[1] ~= 'queued' or h[2] ~= eid then
        ack(strm, eid)  -- left over from a job that was cancelled, requeued or removed
      elseif deadline and deadline > 0 and deadline <= NOW then
        ack(strm, eid)
        finish(id, 'queued', 'expired', 'deadline passed before the job started')
      else
        redis.call('ZREM', QUEUED, id)
        redis.call('HSET', jkey(id), 'consumer', consumer, 'started_ms', num(NOW))
        set_state(id, 'queued', 'running')
        return {'job', strm, eid, id, redis.call('HGETALL', jkey(id))}
      end
    end
  end
end
return {'again'}
)lua";

// A claimed job whose record could not be decoded goes to the dead letters.
// ARGV[5] id, [6] stream, [7] entry id, [8] reason.
constexpr const char* kBury = R"lua(
local id, strm, eid, reason = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
ack(strm, eid)
local h = redis.pcall('HMGET', jkey(id), 'state', 'attempts')
if h.err or not h[1] then
  redis.call('ZREM', QUEUED, id)
  dead_letter(id, reason, 0)
  return {'ok'}
end
dead_letter(id, reason, h[2] or '')
finish(id, h[1], 'dead', reason)
return {'ok'}
)lua";

// Complete / Fail / ConfirmCancelled / Finish. ARGV[5] id, [6] stream, [7] entry id, [8] new
// state, [9] result, [10] error ('' = none), [11] the event that ends the log ('' = none;
// written only here, with the outcome, never by a delivery that is no longer current), [12..]
// field/value pairs of the error's code and detail (job_hash_codec.h's error_*). The outcome
// is written before the XACK.
constexpr const char* kFinishDelivery = R"lua(
local id, strm, eid, state = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local ok, outcome = current_delivery(id, eid)
if not ok then return outcome end
if state == 'succeeded' then redis.call('HSET', jkey(id), 'result', ARGV[9]) end
if #ARGV >= 13 then redis.call('HSET', jkey(id), unpack(ARGV, 12)) end
if ARGV[11] and ARGV[11] ~= '' then
  local ev = evkey(id)
  redis.call('XADD', ev, '0-' .. num(redis.call('XLEN', ev) + 1), 'd', ARGV[11])
end
local err = nil
if ARGV[10] ~= '' then err = ARGV[10] end
finish(id, 'running', state, err)
ack(strm, eid)
return {'ok'}
)lua";

// Heartbeat and MarkRunning: reset the delivery's idle time (XCLAIM to its own consumer).
// ARGV[5] id, [6] stream, [7] entry id, [8] consumer, [9] executor, [10] '1' = mark running.
constexpr const char* kTouch = R"lua(
local id, strm, eid = ARGV[5], ARGV[6], ARGV[7]
local ok, outcome = current_delivery(id, eid)
if not ok then return outcome end
if ARGV[10] == '1' then
  redis.call('HSET', jkey(id), 'executor', ARGV[9], 'started_ms', num(NOW))
end
redis.call('XCLAIM', strm, GROUP, ARGV[8], 0, eid, 'JUSTID')
return {'ok'}
)lua";

// ARGV[5] id, [6] stream, [7] entry id. Returns {'ok', 'queued' | 'cancelled' | 'dead'}.
constexpr const char* kRequeue = R"lua(
local id, strm, eid = ARGV[5], ARGV[6], ARGV[7]
local ok, outcome = current_delivery(id, eid)
if not ok then return outcome end
return {'ok', lose_delivery(id, strm, eid, 0)}
)lua";

// One XAUTOCLAIM page of one priority stream. ARGV[5] consumer, [6] stream, [7] cursor,
// [8] min idle ms, [9] max attempts, [10] page size.
// Returns {next cursor, {requeued ids}, {dead ids}, {cancelled ids}}.
constexpr const char* kReclaim = R"lua(
local consumer, strm, cursor = ARGV[5], ARGV[6], ARGV[7]
local max_attempts = tonumber(ARGV[9])
local r = redis.call('XAUTOCLAIM', strm, GROUP, consumer, ARGV[8], cursor, 'COUNT', ARGV[10])
local out = {r[1], {}, {}, {}}
for _, e in ipairs(r[2]) do
  local eid, fields = e[1], e[2]
  local id = nil
  if type(fields) == 'table' and fields[1] == 'job' then id = fields[2] end
  local current = false
  if id then current = current_delivery(id, eid) end
  if not current then
    ack(strm, eid)  -- its job moved on (or is unreadable): nothing to reclaim
  else
    local outcome = lose_delivery(id, strm, eid, max_attempts)
    local slot = 4
    if outcome == 'queued' then slot = 2 elseif outcome == 'dead' then slot = 3 end
    table.insert(out[slot], id)
  end
end
return out
)lua";

// ARGV[5] id. Returns {state after the call} or {'notfound'}.
constexpr const char* kCancel = R"lua(
local id = ARGV[5]
local h = redis.call('HMGET', jkey(id), 'state', 'entry', 'priority')
if not h[1] then return {'notfound'} end
if h[1] == 'queued' then
  local prio = valid_prio(h[3])
  if prio and h[2] and h[2] ~= '' then redis.call('XDEL', stream(prio), h[2]) end
  finish(id, 'queued', 'cancelled', 'cancelled while queued')
  return {'cancelled'}
elseif h[1] == 'running' then
  redis.call('HSET', jkey(id), 'cancel_requested', '1')
end
return {h[1]}
)lua";

// ARGV[5] id, [6] event bytes. Returns {'ok', index}, {'notfound'} or {'closed', state}.
// No TTL here: the log lives as long as the record, which expires only once finished.
constexpr const char* kAppendEvent = R"lua(
local id = ARGV[5]
local state = redis.call('HGET', jkey(id), 'state')
if not state then return {'notfound'} end
if TERMINAL[state] then return {'closed', state} end
local ev = evkey(id)
local n = redis.call('XLEN', ev)
redis.call('XADD', ev, '0-' .. num(n + 1), 'd', ARGV[6])
return {'ok', n}
)lua";

struct ScriptSource {
  const char* name;
  const char* body;
};
constexpr std::array<ScriptSource, kRedisScriptCount> kSources = {{
    {"submit", kSubmit},
    {"claim", kClaim},
    {"bury", kBury},
    {"finish", kFinishDelivery},
    {"touch", kTouch},
    {"requeue", kRequeue},
    {"reclaim", kReclaim},
    {"cancel", kCancel},
    {"append-event", kAppendEvent},
}};

}  // namespace

const char* RedisScriptName(RedisScriptId id) { return kSources[static_cast<int>(id)].name; }

const std::string& RedisScriptBody(RedisScriptId id) {
  static const std::array<std::string, kRedisScriptCount> bodies = [] {
    std::array<std::string, kRedisScriptCount> out;
    const std::string limits = "local MINP, MAXP = " + std::to_string(kMinPriority) + ", " +
                               std::to_string(kMaxPriority) + "\n";
    for (int i = 0; i < kRedisScriptCount; ++i) out[i] = limits + kPrelude + kSources[i].body;
    return out;
  }();
  return bodies[static_cast<int>(id)];
}

}  // namespace unmask::jobs
