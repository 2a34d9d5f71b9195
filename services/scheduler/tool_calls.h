// Tool calling in chat (OpenAI's tools / tool_choice / tool_calls), the gRPC-free part: the
// opening of a call the prompt is forced to end with for tool_choice "required" or a tool's
// name, and the calls read back from the model's output.
//
// The format is the one the chat templates of every family unmask serves write into the prompt
// when given tools (LLaDA-MoE's and LLaDA2.x's Ling-2.0 template, Dream's Qwen2.5 template): each
// call is a JSON object {"name": ..., "arguments": {...}} between <tool_call> and </tool_call>
// (the "Hermes" format). A diffusion model here has no constrained decoding, so "required" and a
// named tool are forced by writing the call's opening at the end of the prompt; the output can
// still fail to parse, and then it is text, as vLLM's Hermes parser answers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "unmask/v1/scheduler.pb.h"

namespace unmask::scheduler {

inline constexpr char kToolCallOpen[] = "<tool_call>";
inline constexpr char kToolCallClose[] = "</tool_call>";

// Whether `name` can name a function: 1-64 of a-z, A-Z, 0-9, _ and - (OpenAI's rule).
bool IsToolName(const std::string& name);
// Whether `text` is a JSON object.
bool IsJsonObjectText(const std::string& text);

// What the assistant's answer is forced to begin with for `tool_choice`: nothing for "", "auto"
// and "none"; "<tool_call>\n{\"name\": \"" for "required"; for a tool's name the call's opening
// up to its arguments, "<tool_call>\n{\"name\": \"NAME\", \"arguments\": ".
std::string ForcedToolCallPrefix(const std::string& tool_choice);

struct ParsedToolCalls {
  // The text before the first call, as is (the whole text when no call parsed).
  std::string content;
  // In order; empty when the text holds no <tool_call>, or when one of them is not a JSON object
  // with a string "name" (then content is the whole text). A call's arguments are its JSON
  // object (a string holding one is read too; absent = {}), re-serialized compactly. A last call
  // without its </tool_call> (the output ran out) counts when its JSON is whole. ids are empty.
  std::vector<v1::ToolCall> calls;
};
ParsedToolCalls ParseToolCalls(const std::string& text);

// Where a call may begin in `text`: the position of the first "<tool_call>", else of a tail
// that could still grow into one; text.size() when neither. Streaming sends content only up to
// here.
std::size_t ToolCallStart(std::string_view text);

// How a chat request's output is read: parsed when it offers tools (tool_choice not "none"),
// after the opening ForcedToolCallPrefix writes.
v1::ToolUse ToolUseOf(const v1::ChatMessages& chat);

// A chat job's calls, the way both APIs return them: parsed from use.forced_prefix + text, the
// first only with use.single, ids "call_<job>_<i>" (stable for the job). Empty when !use.parse.
ParsedToolCalls ReadToolCalls(const v1::ToolUse& use, const std::string& job_id, const std::string& text);

}  // namespace unmask::scheduler
