// The one table from the gRPC API's request field names (the ErrorDetail::field of the core's
// errors) to the OpenAI HTTP API's names (the error object's `param`).
#pragma once

#include <string>

namespace unmask::scheduler::http {

// "params.steps" -> "steps", "params.gen_length" -> "max_tokens", "text" -> "prompt",
// "ids" / "ids[3]" -> "prompt" / "prompt[3]", "chat.messages[1].role" -> "messages[1].role",
// "template_text" -> "template";
// a name the HTTP API shares ("n", "priority", ...) or that its parser set
// ("messages[0].content", "stop[1]") is returned as it is.
std::string OpenAiFieldName(const std::string& grpc_field);

}  // namespace unmask::scheduler::http
