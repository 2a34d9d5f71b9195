#include "services/scheduler/http/http_errors.h"

#include "common/auth/api_keys.h"
#include "common/generation/field_names.h"
#include "services/scheduler/http/field_names.h"
#include "services/scheduler/request_limits.h"
#include "services/scheduler/scheduler_core.h"

namespace unmask::scheduler::http {
namespace {

// The status's field in the HTTP API's names; null when it names none.
nlohmann::json ParamFromField(const Status& status) {
  if (status.field().empty()) return nullptr;
  return OpenAiFieldName(status.field());
}

}  // namespace

nlohmann::json OpenAiErrorBody(const std::string& message, const std::string& type, const nlohmann::json& param,
                               const std::string& code) {
  return {{"error", {{"message", message}, {"type", type}, {"param", param}, {"code", code.empty() ? nlohmann::json() : nlohmann::json(code)}}}};
}

HttpError ToHttpError(const Status& status) {
  const nlohmann::json param = ParamFromField(status);
  // A message led by the field's gRPC name ("params.gen_length: ...") leads with the HTTP name.
  const std::string m =
      param.is_string() ? generation::RenameField(status, param.get<std::string>()).message() : status.message();
  HttpError e;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kFailedPrecondition:
      e.status = 400;
      e.body = OpenAiErrorBody(m, "invalid_request_error", param, "invalid_value");
      break;
    case StatusCode::kUnauthenticated:
      e.status = 401;
      e.body = OpenAiErrorBody(m, "authentication_error", nullptr, "invalid_api_key");
      break;
    case StatusCode::kPermissionDenied:
      e.status = 403;
      e.body = OpenAiErrorBody(m, "permission_error", nullptr, "permission_denied");
      break;
    case StatusCode::kNotFound:
      e.status = 404;
      e.body = OpenAiErrorBody(m, "invalid_request_error", param, param == "model" ? "model_not_found" : "not_found");
      break;
    case StatusCode::kResourceExhausted:
      // By the reason the refusal carries (the Is* checks read only status.reason()).
      if (auth::IsKeyLimit(status)) {
        e.status = 429;
        e.body = OpenAiErrorBody(m, "rate_limit_error", nullptr, "api_key_limit");
      } else if (IsClientJobLimit(status)) {
        e.status = 429;
        e.body = OpenAiErrorBody(m, "rate_limit_error", nullptr, "client_limit");
      } else if (IsQueueFull(status)) {
        e.status = 429;
        e.body = OpenAiErrorBody(m, "rate_limit_error", nullptr, "queue_full");
      } else {
        e.status = 503;
        e.body = OpenAiErrorBody(m, "service_unavailable", nullptr, "does_not_fit");
      }
      break;
    case StatusCode::kUnavailable:
      e.status = 503;
      e.body = OpenAiErrorBody(m, "service_unavailable", param, "no_executor");
      break;
    case StatusCode::kDeadlineExceeded:
      e.status = 504;
      e.body = OpenAiErrorBody(m, "timeout", nullptr, "deadline_exceeded");
      break;
    case StatusCode::kUnimplemented:
      e.status = 501;
      e.body = OpenAiErrorBody(m, "server_error", nullptr, "unimplemented");
      break;
    default:
      e.status = 500;
      e.body = OpenAiErrorBody(m.empty() ? StatusCodeName(status.code()) : m, "server_error", nullptr,
                               status.code() == StatusCode::kCancelled ? "cancelled" : "internal_error");
  }
  return e;
}

}  // namespace unmask::scheduler::http
