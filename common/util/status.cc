#include "common/util/status.h"

namespace unmask {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnknown: return "UNKNOWN";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kUnauthenticated: return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  Status out = *this;
  out.message_ = context + ": " + message_;
  return out;
}

namespace {
const std::string& Empty() {
  static const std::string empty;
  return empty;
}
}  // namespace

const std::string& Status::field() const { return detail_ ? detail_->field : Empty(); }
const std::string& Status::reason() const { return detail_ ? detail_->reason : Empty(); }

Status Status::WithField(std::string field) const {
  if (ok()) return *this;
  ErrorDetail d = detail_ ? *detail_ : ErrorDetail{};
  d.field = std::move(field);
  return Status(code_, message_, std::move(d));
}

Status Status::WithReason(std::string reason, std::map<std::string, std::string> metadata) const {
  if (ok()) return *this;
  ErrorDetail d = detail_ ? *detail_ : ErrorDetail{};
  d.reason = std::move(reason);
  for (auto& [k, v] : metadata) d.metadata[k] = std::move(v);
  return Status(code_, message_, std::move(d));
}

Status InvalidFieldError(const std::string& field, const std::string& rule) {
  return Status(StatusCode::kInvalidArgument, field + ": " + rule, ErrorDetail{field, "", {}});
}

}  // namespace unmask
