// The one conversion of unmask's Status into an HTTP status and an OpenAI error object
// {"error": {"message", "type", "param", "code"}}. The OpenAI SDKs pick their exception class by
// the HTTP status (400 BadRequestError, 401 AuthenticationError, 404 NotFoundError, 413, 429
// RateLimitError, 5xx InternalServerError), so the status is what matters most:
//
//   INVALID_ARGUMENT, OUT_OF_RANGE, FAILED_PRECONDITION  400
//   UNAUTHENTICATED 401, PERMISSION_DENIED 403, NOT_FOUND 404
//   RESOURCE_EXHAUSTED  429 by the status's reason: QUEUE_FULL "queue_full", API_KEY_LIMIT /
//                       API_KEY_RATE "api_key_limit", CLIENT_JOB_LIMIT "client_limit"; any other
//                       503 "does_not_fit" (no executor can take the request)
//   UNAVAILABLE 503, DEADLINE_EXCEEDED 504, UNIMPLEMENTED 501, anything else 500
//
// `param` is the status's detail field in the HTTP API's names (field_names.h), null when the
// status names no field; a message that begins with that field's gRPC name ("params.gen_length:
// ...") begins with the HTTP name instead ("max_tokens: ..."). No other message text is parsed.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/util/status.h"

namespace unmask::scheduler::http {

struct HttpError {
  int status = 500;
  nlohmann::json body;  // {"error": {...}}
};

HttpError ToHttpError(const Status& status);

// An error object for what has no Status (413 from the HTTP library, unknown routes).
nlohmann::json OpenAiErrorBody(const std::string& message, const std::string& type, const nlohmann::json& param,
                               const std::string& code);

}  // namespace unmask::scheduler::http
