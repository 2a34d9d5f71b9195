// A small Status / StatusOr for the gRPC-free libraries in common/.
//
// Why not absl::Status: the engine must build alone against the CUDA LibTorch of a PyTorch
// install on machines that have no Abseil package. The codes match google.rpc.Code one to one so
// that the service edge converts with a single cast (see services/*/grpc_status.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace unmask {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

const char* StatusCodeName(StatusCode code);

// What a program reads of an error besides its code, so that no caller parses message text. The
// service edges put it on the wire as google.rpc.BadRequest (field) and google.rpc.ErrorInfo
// (reason, metadata) in the gRPC status details, and the HTTP API as the OpenAI error's `param`
// and `code` (services/common/grpc_status.h, services/scheduler/http/http_errors.h).
struct ErrorDetail {
  // The request field at fault, as the gRPC API names it ("params.steps", "ids[3]",
  // "chat.messages[1].role"); empty when no one field is.
  std::string field;
  // Why, for programs: UPPER_SNAKE_CASE and stable ("QUEUE_FULL", "API_KEY_LIMIT",
  // "CLIENT_JOB_LIMIT", "DOES_NOT_FIT", "INVALID_VALUE", ...); empty when the code says enough.
  std::string reason;
  // Facts that go with the reason, such as {"limit", "1000"}.
  std::map<std::string, std::string> metadata;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  Status(StatusCode code, std::string message, ErrorDetail detail)
      : code_(code), message_(std::move(message)), detail_(std::make_shared<const ErrorDetail>(std::move(detail))) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: steps: must be ..." ; "OK" when ok.
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>" (the detail is kept).
  Status WithContext(const std::string& context) const;

  // The detail, or null when the error has none.
  const ErrorDetail* detail() const { return detail_.get(); }
  // The detail's field and reason, empty when there is none.
  const std::string& field() const;
  const std::string& reason() const;
  // A copy with the detail's field / reason (and metadata) set; an OK status stays as it is.
  Status WithField(std::string field) const;
  Status WithReason(std::string reason, std::map<std::string, std::string> metadata = {}) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::shared_ptr<const ErrorDetail> detail_;  // shared: copies of a Status are cheap
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status DataLossError(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status FailedPreconditionError(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status UnimplementedError(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status ResourceExhaustedError(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status CancelledError(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
inline Status OutOfRangeError(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status AlreadyExistsError(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
inline Status PermissionDeniedError(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }

// INVALID_ARGUMENT with message "<field>: <rule>" and the detail's field set: the error of a
// request field that has a bad value.
Status InvalidFieldError(const std::string& field, const std::string& rule);

// Holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status) : rep_(status) {  // NOLINT: implicit by design
    if (status.ok()) rep_ = Status(StatusCode::kInternal, "StatusOr built from an OK status");
  }
  StatusOr(Status&& status) : StatusOr(static_cast<const Status&>(status)) {}  // NOLINT
  StatusOr(const T& value) : rep_(value) {}                                   // NOLINT
  StatusOr(T&& value) : rep_(std::move(value)) {}                             // NOLINT

  bool ok() const { return std::holds_alternative<T>(rep_); }
  Status status() const { return ok() ? OkStatus() : std::get<Status>(rep_); }

  const T& value() const& { return std::get<T>(rep_); }
  T& value() & { return std::get<T>(rep_); }
  T&& value() && { return std::get<T>(std::move(rep_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<Status, T> rep_;
};

}  // namespace unmask

#define UNMASK_CONCAT_INNER(a, b) a##b
#define UNMASK_CONCAT(a, b) UNMASK_CONCAT_INNER(a, b)

#define UNMASK_RETURN_IF_ERROR(expr)            \
  do {                                          \
    ::unmask::Status _unmask_status = (expr);   \
    if (!_unmask_status.ok()) return _unmask_status; \
  } while (0)

#define UNMASK_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#define UNMASK_ASSIGN_OR_RETURN(lhs, expr) \
  UNMASK_ASSIGN_OR_RETURN_IMPL(UNMASK_CONCAT(_unmask_statusor_, __LINE__), lhs, expr)
