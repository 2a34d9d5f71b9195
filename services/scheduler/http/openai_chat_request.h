// The chat part of a POST /v1/chat/completions body into GenerateRequest.chat:
//
//   messages             role system / developer (first only), user, assistant or tool; content
//                        a string or an array of text parts (an assistant's may be null when it
//                        made tool calls); an assistant's `tool_calls` ([{id, type "function",
//                        function {name, arguments}}], arguments a JSON object as text, or the
//                        object); a tool's `tool_call_id` (required). The last message is the
//                        user's or a tool's answer.
//   tools                up to 128 {type "function", function {name, description, parameters
//                        (a JSON Schema object), strict (accepted, not enforced)}}
//   tool_choice          "auto" | "none" | "required" | {type "function", function {name}}, the
//                        last two only with tools (the name one of them)
//   parallel_tool_calls  false: at most one call comes back
//
// Errors are InvalidArgument naming the field as OpenAI's API does (messages[2].tool_calls[0].
// function.arguments, tools[1].function.name, ...).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "common/util/status.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::scheduler::http {

Status ParseChat(const nlohmann::ordered_json& body, v1::GenerateRequest& r);

// `tools` alone (an array of OpenAI tool objects) into chat.tools, errors naming "tools[i]...":
// also what the `unmask` CLI's --tools file holds.
Status ParseTools(const nlohmann::ordered_json& tools, v1::ChatMessages& chat);

}  // namespace unmask::scheduler::http
