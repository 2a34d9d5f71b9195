#include "services/scheduler/http/http_errors.h"

#include <cctype>

#include "services/scheduler/scheduler_core.h"

namespace unmask::scheduler::http {
namespace {

bool FieldChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '[' || c == ']';
}

// The core's (gRPC) names of fields whose HTTP names differ.
std::string HttpName(std::string field) {
  for (const char* prefix : {"params.", "chat."}) {
    const std::string p = prefix;
    if (field.rfind(p, 0) == 0) field = field.substr(p.size());
  }
  if (field == "gen_length") return "max_tokens";
  if (field == "text") return "prompt";
  if (field.rfind("ids", 0) == 0) return "prompt" + field.substr(3);
  return field;
}

}  // namespace

nlohmann::json OpenAiErrorBody(const std::string& message, const std::string& type, const nlohmann::json& param,
                               const std::string& code) {
  return {{"error", {{"message", message}, {"type", type}, {"param", param}, {"code", code.empty() ? nlohmann::json() : nlohmann::json(code)}}}};
}

nlohmann::json ParamOf(const std::string& message) {
  std::string rest = message;
  // The core's post-clamp checks say "params: steps: ..."; the field is the second part.
  if (rest.rfind("params: ", 0) == 0) rest = rest.substr(8);
  std::size_t n = 0;
  while (n < rest.size() && FieldChar(rest[n])) ++n;
  // "field: rule" or, from the sampler's own checks, "field (value) must ...".
  const bool named = n > 0 && n < rest.size() && std::isalpha(static_cast<unsigned char>(rest[0])) &&
                     (rest[n] == ':' || rest.compare(n, 2, " (") == 0);
  if (!named) return nullptr;
  return HttpName(rest.substr(0, n));
}

HttpError ToHttpError(const Status& status) {
  const std::string& m = status.message();
  HttpError e;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kFailedPrecondition:
      e.status = 400;
      e.body = OpenAiErrorBody(m, "invalid_request_error", ParamOf(m), "invalid_value");
      break;
    case StatusCode::kUnauthenticated:
      e.status = 401;
      e.body = OpenAiErrorBody(m, "authentication_error", nullptr, "invalid_api_key");
      break;
    case StatusCode::kPermissionDenied:
      e.status = 403;
      e.body = OpenAiErrorBody(m, "permission_error", nullptr, "permission_denied");
      break;
    case StatusCode::kNotFound: {
      e.status = 404;
      const nlohmann::json param = ParamOf(m);
      e.body = OpenAiErrorBody(m, "invalid_request_error", param, param == "model" ? "model_not_found" : "not_found");
      break;
    }
    case StatusCode::kResourceExhausted:
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
      e.body = OpenAiErrorBody(m, "service_unavailable", ParamOf(m), "no_executor");
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
