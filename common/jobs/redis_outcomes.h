// Reading the replies of RedisJobStore's scripts and hash commands (internal to the library).
#pragma once

#include <hiredis/hiredis.h>

#include <string>

#include "common/jobs/job_hash_codec.h"
#include "common/util/status.h"

namespace unmask::jobs {

// The first word of a script's outcome array ("ok", "notfound", ...).
StatusOr<std::string> OutcomeWord(const redisReply* reply, const std::string& script);
// Element i of an outcome array as bytes ("" when absent or not a string).
std::string OutcomeText(const redisReply* reply, std::size_t i);

// The outcomes every delivery script may give besides "ok": notfound, stale, corrupt.
Status DeliveryOutcomeStatus(const std::string& word, const redisReply* reply,
                             const std::string& job_id, const std::string& delivery_id);

// The flat field/value array of HGETALL (or the claim script's copy of it).
StatusOr<HashFields> ToHashFields(const redisReply* reply, const std::string& command);

}  // namespace unmask::jobs
