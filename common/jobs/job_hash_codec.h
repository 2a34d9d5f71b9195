// How a JobRecord is stored in Redis: one hash per job at "<prefix>:job:<id>", one field per
// record field, values as Redis strings (binary-safe, so payload and result are raw bytes).
//
//   field             value
//   id                the job id (must equal the key's id)
//   model             non-empty
//   payload           opaque bytes
//   priority          decimal integer, kMinPriority..kMaxPriority
//   deadline_ms       decimal unix ms, 0 = none
//   idempotency_key   text
//   traceparent       text
//   state             queued | running | succeeded | failed | cancelled | expired | dead
//   attempts          decimal integer >= 0
//   executor          text
//   created_ms, started_ms, finished_ms, updated_ms   decimal unix ms (0 = not yet)
//   result            opaque bytes
//   error             text
//   error_code        a failure's google.rpc code, decimal 1..16; absent = none stored (records
//                     from before codes were, and jobs that ended otherwise: read as INTERNAL)
//   error_field, error_reason   text, its detail's field and reason
//   error_metadata    its detail's metadata, a JSON object of strings ("" = none)
//   cancel_requested  "0" | "1"
// Fields only the store's scripts use (not part of JobRecord):
//   seq               queue order within a priority (from the "<prefix>:jobs:seq" counter)
//   entry             the job's current stream entry id (queued: undelivered; running: the
//                     delivery, i.e. the handle's delivery_id); "" when terminal
//   consumer          the consumer holding the delivery
// A hash is read strictly: a missing required field, a non-number where a number belongs or
// an unknown state is DataLoss naming the job and the field. Required: id, model, priority,
// state, attempts, created_ms; the others default to empty / 0 when absent.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/jobs/job_record.h"
#include "common/util/status.h"

namespace unmask::jobs {

using HashFields = std::vector<std::pair<std::string, std::string>>;

// The fields HSET writes for a newly submitted job (state queued, attempts 0, created_ms now).
HashFields EncodeNewJob(const JobRecord& record, const std::string& job_id, std::int64_t now_ms);

// The fields HSET writes with a failure's error (error_code, error_field, error_reason,
// error_metadata); none for an outcome without a code and detail.
HashFields EncodeErrorDetail(const std::optional<StatusCode>& code, const ErrorDetail& detail);

// Decodes the field/value pairs of HGETALL. `job_id` is the id from the key (for messages and
// the id check).
StatusOr<JobRecord> DecodeJobHash(const std::string& job_id, const HashFields& fields);

}  // namespace unmask::jobs
