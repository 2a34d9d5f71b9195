#include "common/jobs/redis_outcomes.h"

#include "common/jobs/redis_client.h"

namespace unmask::jobs {

StatusOr<std::string> OutcomeWord(const redisReply* reply, const std::string& script) {
  const redisReply* first = ReplyElement(reply, 0);
  if (!first || first->type != REDIS_REPLY_STRING) {
    return UnexpectedReply("EVALSHA " + script, "not an outcome array");
  }
  return ReplyString(first);
}

std::string OutcomeText(const redisReply* reply, std::size_t i) {
  return ReplyString(ReplyElement(reply, i));
}

Status DeliveryOutcomeStatus(const std::string& word, const redisReply* reply,
                             const std::string& job_id, const std::string& delivery_id) {
  if (word == "notfound") return NotFoundError("job " + job_id + ": not found");
  if (word == "stale") {
    return FailedPreconditionError("job " + job_id + ": delivery " + delivery_id +
                                   " is no longer current (job is " + OutcomeText(reply, 1) +
                                   "); it was reclaimed or already finished");
  }
  if (word == "corrupt") {
    return DataLossError("job " + job_id + ": stored record is corrupt: " + OutcomeText(reply, 2));
  }
  return InternalError("job " + job_id + ": unexpected script outcome '" + word + "'");
}

StatusOr<HashFields> ToHashFields(const redisReply* reply, const std::string& command) {
  if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements % 2 != 0) {
    return UnexpectedReply(command, "not a field/value array");
  }
  HashFields fields;
  fields.reserve(reply->elements / 2);
  for (std::size_t i = 0; i < reply->elements; i += 2) {
    fields.emplace_back(ReplyString(reply->element[i]), ReplyString(reply->element[i + 1]));
  }
  return fields;
}

}  // namespace unmask::jobs
