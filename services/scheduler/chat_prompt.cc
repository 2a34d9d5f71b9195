#include "services/scheduler/chat_prompt.h"

#include <nlohmann/json.hpp>

#include "services/scheduler/tool_calls.h"

namespace unmask::scheduler {
namespace {

using nlohmann::ordered_json;

std::vector<tokenizer::ChatMessage> Messages(const v1::ChatMessages& chat) {
  std::vector<tokenizer::ChatMessage> out;
  for (const auto& m : chat.messages()) {
    tokenizer::ChatMessage message{m.role(), m.content(), {}, m.tool_call_id()};
    for (const auto& c : m.tool_calls()) message.tool_calls.push_back({c.id(), c.name(), c.arguments()});
    out.push_back(std::move(message));
  }
  return out;
}

// OpenAI's tool objects, as clients send them and apply_chat_template(tools=...) passes them on.
ordered_json ToolsJson(const v1::ChatMessages& chat) {
  ordered_json tools = ordered_json::array();
  for (const auto& t : chat.tools()) {
    ordered_json function = {{"name", t.name()}};
    if (!t.description().empty()) function["description"] = t.description();
    if (!t.parameters().empty()) function["parameters"] = ordered_json::parse(t.parameters(), nullptr, false);
    tools.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return tools;
}

}  // namespace

StatusOr<ChatPrompt> EncodeChatPrompt(const tokenizer::Tokenizer& tokenizer,
                                      const tokenizer::CheckpointChatTemplate* chat_template,
                                      const v1::ChatMessages& chat, const std::string& model) {
  const std::vector<tokenizer::ChatMessage> messages = Messages(chat);
  ChatPrompt out;
  out.tool_use = ToolUseOf(chat);
  if (!out.tool_use.parse()) {
    UNMASK_ASSIGN_OR_RETURN(out.ids, tokenizer::EncodeChat(tokenizer, chat_template, messages));
    return out;
  }
  if (chat_template == nullptr) {
    return FailedPreconditionError("model '" + model +
                                   "' takes no tools: it ships no chat template (tokenizer_config.json's "
                                   "chat_template), and the built-in one has no place for tools")
        .WithField("chat.tools");
  }
  UNMASK_ASSIGN_OR_RETURN(std::string prompt, chat_template->Render(messages, true, ToolsJson(chat)));
  // A template without a tools branch renders the same prompt with or without them: the model
  // would never hear of the tools, so say so instead of answering as if it had.
  UNMASK_ASSIGN_OR_RETURN(const std::string without, chat_template->Render(messages, true));
  if (prompt == without) {
    return FailedPreconditionError("model '" + model + "' takes no tools: its chat template (" +
                                   chat_template->source() + ") renders none")
        .WithField("chat.tools");
  }
  if (prompt.find(kToolCallOpen) == std::string::npos) {
    return FailedPreconditionError("model '" + model + "': its chat template (" + chat_template->source() +
                                   ") does not ask for calls as <tool_call>{...}</tool_call>, the one format "
                                   "unmask reads calls in")
        .WithField("chat.tools");
  }
  prompt += out.tool_use.forced_prefix();
  UNMASK_ASSIGN_OR_RETURN(out.ids, tokenizer.Encode(prompt, /*parse_special_tokens=*/true));
  return out;
}

}  // namespace unmask::scheduler
