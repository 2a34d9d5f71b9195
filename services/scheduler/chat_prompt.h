// A chat request's prompt: the messages (tool calls and tool answers included) and the tools
// rendered by the model's chat template, then encoded; with tool_choice "required" or a tool's
// name the prompt ends with the opening of that call (tool_calls.h). Also how the job reads its
// output back (v1::ToolUse).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tokenizer/checkpoint_chat_template.h"
#include "common/tokenizer/tokenizer.h"
#include "common/util/status.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::scheduler {

struct ChatPrompt {
  std::vector<std::int32_t> ids;
  v1::ToolUse tool_use;  // parse = false without tools (or with tool_choice "none")
};

// `chat_template`: the checkpoint's (null: it ships none, and the built-in template is used,
// which takes no tools, tool calls or tool answers). Errors name the request field: tools given
// to a model whose template has no place for them, or whose template does not ask for the
// <tool_call> format; what the template refuses.
StatusOr<ChatPrompt> EncodeChatPrompt(const tokenizer::Tokenizer& tokenizer,
                                      const tokenizer::CheckpointChatTemplate* chat_template,
                                      const v1::ChatMessages& chat, const std::string& model);

}  // namespace unmask::scheduler
