#include "common/jobs/job_hash_codec.h"

#include <charconv>
#include <cstdint>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

namespace unmask::jobs {
namespace {

std::string Printable(const std::string& value) {
  std::string out;
  for (char c : value.substr(0, 40)) {
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  if (value.size() > 40) out += "...";
  return out;
}

Status Corrupt(const std::string& job_id, const std::string& field, const std::string& why) {
  return DataLossError("job " + job_id + ": stored record is corrupt: field '" + field + "' " +
                       why);
}

StatusOr<std::int64_t> ParseInt(const std::string& job_id, const std::string& field,
                                const std::string& value) {
  std::int64_t out = 0;
  const char* begin = value.data();
  const char* end = begin + value.size();
  auto [ptr, ec] = std::from_chars(begin, end, out);
  if (value.empty() || ec != std::errc() || ptr != end) {
    return Corrupt(job_id, field, "is not an integer: '" + Printable(value) + "'");
  }
  return out;
}

class FieldReader {
 public:
  FieldReader(const std::string& job_id, const HashFields& fields) : job_id_(job_id) {
    for (const auto& [name, value] : fields) map_[name] = value;
  }
  bool Has(const std::string& field) const { return map_.count(field) != 0; }
  StatusOr<std::string> Text(const std::string& field, bool required) const {
    auto it = map_.find(field);
    if (it == map_.end()) {
      if (required) return Corrupt(job_id_, field, "is missing");
      return std::string();
    }
    return it->second;
  }
  StatusOr<std::int64_t> Int(const std::string& field, bool required, std::int64_t min,
                             std::int64_t max) const {
    auto it = map_.find(field);
    if (it == map_.end()) {
      if (required) return Corrupt(job_id_, field, "is missing");
      return std::int64_t{0};
    }
    UNMASK_ASSIGN_OR_RETURN(std::int64_t value, ParseInt(job_id_, field, it->second));
    if (value < min || value > max) {
      return Corrupt(job_id_, field,
                     "is out of range: " + std::to_string(value) + " (expected " +
                         std::to_string(min) + ".." + std::to_string(max) + ")");
    }
    return value;
  }

 private:
  const std::string& job_id_;
  std::map<std::string, std::string> map_;
};

constexpr std::int64_t kMaxInt64 = INT64_MAX;

StatusOr<std::map<std::string, std::string>> DecodeMetadata(const std::string& job_id, const std::string& text) {
  std::map<std::string, std::string> out;
  if (text.empty()) return out;
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    return Corrupt(job_id, "error_metadata", "is not a JSON object: '" + Printable(text) + "'");
  }
  for (const auto& entry : json.items()) {
    if (!entry.value().is_string()) {
      return Corrupt(job_id, "error_metadata", "has a value that is not a string: '" + Printable(entry.key()) + "'");
    }
    out[entry.key()] = entry.value().get<std::string>();
  }
  return out;
}

// error_code, error_field, error_reason, error_metadata: a failure's code and detail.
Status DecodeErrorDetail(const std::string& job_id, const FieldReader& in, JobRecord& r) {
  if (in.Has("error_code")) {
    UNMASK_ASSIGN_OR_RETURN(std::int64_t code,
                            in.Int("error_code", true, 1, static_cast<int>(StatusCode::kUnauthenticated)));
    r.error_code = static_cast<StatusCode>(code);
  }
  UNMASK_ASSIGN_OR_RETURN(r.error_detail.field, in.Text("error_field", false));
  UNMASK_ASSIGN_OR_RETURN(r.error_detail.reason, in.Text("error_reason", false));
  UNMASK_ASSIGN_OR_RETURN(std::string metadata, in.Text("error_metadata", false));
  UNMASK_ASSIGN_OR_RETURN(r.error_detail.metadata, DecodeMetadata(job_id, metadata));
  return OkStatus();
}

}  // namespace

HashFields EncodeErrorDetail(const std::optional<StatusCode>& code, const ErrorDetail& detail) {
  HashFields out;
  if (code) out.emplace_back("error_code", std::to_string(static_cast<int>(*code)));
  if (!detail.field.empty()) out.emplace_back("error_field", detail.field);
  if (!detail.reason.empty()) out.emplace_back("error_reason", detail.reason);
  if (!detail.metadata.empty()) {
    out.emplace_back("error_metadata", nlohmann::json(detail.metadata).dump(-1, ' ', false,
                                                                           nlohmann::json::error_handler_t::replace));
  }
  return out;
}

HashFields EncodeNewJob(const JobRecord& record, const std::string& job_id, std::int64_t now_ms) {
  const std::string now = std::to_string(now_ms);
  return {
      {"id", job_id},
      {"model", record.model},
      {"payload", record.payload},
      {"priority", std::to_string(record.priority)},
      {"deadline_ms", std::to_string(record.deadline_unix_ms)},
      {"idempotency_key", record.idempotency_key},
      {"traceparent", record.traceparent},
      {"state", JobStateName(JobState::kQueued)},
      {"attempts", "0"},
      {"executor", ""},
      {"created_ms", now},
      {"started_ms", "0"},
      {"finished_ms", "0"},
      {"updated_ms", now},
      {"result", ""},
      {"error", ""},
      {"cancel_requested", "0"},
  };
}

StatusOr<JobRecord> DecodeJobHash(const std::string& job_id, const HashFields& fields) {
  FieldReader in(job_id, fields);
  JobRecord r;
  UNMASK_ASSIGN_OR_RETURN(r.job_id, in.Text("id", true));
  if (r.job_id != job_id) {
    return Corrupt(job_id, "id", "names another job: '" + Printable(r.job_id) + "'");
  }
  UNMASK_ASSIGN_OR_RETURN(r.model, in.Text("model", true));
  if (r.model.empty()) return Corrupt(job_id, "model", "is empty");
  UNMASK_ASSIGN_OR_RETURN(r.payload, in.Text("payload", false));
  UNMASK_ASSIGN_OR_RETURN(std::int64_t priority,
                          in.Int("priority", true, kMinPriority, kMaxPriority));
  r.priority = static_cast<int>(priority);
  UNMASK_ASSIGN_OR_RETURN(r.deadline_unix_ms, in.Int("deadline_ms", false, 0, kMaxInt64));
  UNMASK_ASSIGN_OR_RETURN(r.idempotency_key, in.Text("idempotency_key", false));
  UNMASK_ASSIGN_OR_RETURN(r.traceparent, in.Text("traceparent", false));
  UNMASK_ASSIGN_OR_RETURN(std::string state, in.Text("state", true));
  std::optional<JobState> parsed = ParseJobState(state);
  if (!parsed) return Corrupt(job_id, "state", "is not a job state: '" + Printable(state) + "'");
  r.state = *parsed;
  UNMASK_ASSIGN_OR_RETURN(std::int64_t attempts, in.Int("attempts", true, 0, INT32_MAX));
  r.attempts = static_cast<int>(attempts);
  UNMASK_ASSIGN_OR_RETURN(r.executor, in.Text("executor", false));
  UNMASK_ASSIGN_OR_RETURN(r.created_unix_ms, in.Int("created_ms", true, 0, kMaxInt64));
  UNMASK_ASSIGN_OR_RETURN(r.started_unix_ms, in.Int("started_ms", false, 0, kMaxInt64));
  UNMASK_ASSIGN_OR_RETURN(r.finished_unix_ms, in.Int("finished_ms", false, 0, kMaxInt64));
  UNMASK_ASSIGN_OR_RETURN(r.updated_unix_ms, in.Int("updated_ms", false, 0, kMaxInt64));
  UNMASK_ASSIGN_OR_RETURN(r.result, in.Text("result", false));
  UNMASK_ASSIGN_OR_RETURN(r.error, in.Text("error", false));
  UNMASK_RETURN_IF_ERROR(DecodeErrorDetail(job_id, in, r));
  UNMASK_ASSIGN_OR_RETURN(std::string cancel, in.Text("cancel_requested", false));
  if (cancel != "" && cancel != "0" && cancel != "1") {
    return Corrupt(job_id, "cancel_requested", "is not 0 or 1: '" + Printable(cancel) + "'");
  }
  r.cancel_requested = cancel == "1";
  return r;
}

}  // namespace unmask::jobs
