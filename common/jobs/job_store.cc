#include "common/jobs/job_store.h"

namespace unmask::jobs {

Status CheckHandle(const std::string& job_id, const DeliveryHandle& handle) {
  if (handle.job_id.empty() || handle.delivery_id.empty() || handle.queue.empty()) {
    return InvalidArgumentError("delivery handle: empty (not from Claim)");
  }
  // The redundant job id catches a dispatcher finishing one job with another job's handle.
  if (job_id != handle.job_id) {
    return InvalidArgumentError("delivery handle belongs to job " + handle.job_id + ", not " +
                                job_id);
  }
  return OkStatus();
}

Status CheckListFilter(const ListFilter& filter) {
  if (filter.limit < 1 || filter.limit > 1000) {
    return InvalidArgumentError("limit: must be in 1..1000, got " + std::to_string(filter.limit));
  }
  return OkStatus();
}

Status CheckReclaimArgs(std::int64_t min_idle_ms, int max_attempts) {
  if (min_idle_ms < 0) {
    return InvalidArgumentError("min_idle_ms: must not be negative, got " +
                                std::to_string(min_idle_ms));
  }
  if (max_attempts < 1) {
    return InvalidArgumentError("max_attempts: must be at least 1, got " +
                                std::to_string(max_attempts));
  }
  return OkStatus();
}

StatusOr<OutcomeFields> FieldsOf(const Outcome& outcome) {
  const std::string message = outcome.error.ok() ? std::string() : outcome.error.message();
  OutcomeFields fields;
  switch (outcome.state) {
    case JobState::kSucceeded:
      fields.result = outcome.result;
      return fields;
    case JobState::kFailed:
      fields.error = message.empty() ? "failed" : message;
      if (outcome.error.ok()) return fields;
      fields.error_code = outcome.error.code();
      if (outcome.error.detail()) fields.error_detail = *outcome.error.detail();
      return fields;
    case JobState::kCancelled:
      fields.error = message.empty() ? "cancelled while running" : message;
      return fields;
    default:
      return InvalidArgumentError(std::string("outcome state: must be succeeded, failed or cancelled, got ") +
                                  JobStateName(outcome.state));
  }
}

}  // namespace unmask::jobs
