#include "common/tokenizer/checkpoint_chat_template.h"

#include <fstream>
#include <sstream>

namespace unmask::tokenizer {

using nlohmann::ordered_json;

StatusOr<std::shared_ptr<const CheckpointChatTemplate>> CheckpointChatTemplate::FromTokenizerConfig(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::shared_ptr<const CheckpointChatTemplate>();
  std::stringstream buf;
  buf << in.rdbuf();
  return FromText(buf.str(), path);
}

StatusOr<std::shared_ptr<const CheckpointChatTemplate>> CheckpointChatTemplate::FromText(const std::string& text,
                                                                                        const std::string& source) {
  ordered_json config = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return InvalidArgumentError(source + ": not well-formed JSON");
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return std::shared_ptr<const CheckpointChatTemplate>();
  std::string text_of_template;
  if (it->is_string()) {
    text_of_template = it->get<std::string>();
  } else if (it->is_array()) {  // named templates: transformers' default is the one named "default"
    for (const auto& entry : *it) {
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string())
        text_of_template = entry["template"].get<std::string>();
    }
    if (text_of_template.empty())
      return InvalidArgumentError(source + ": 'chat_template' is a list without a template named \"default\"");
  } else {
    return InvalidArgumentError(source + ": 'chat_template' must be a string or a list of {name, template}");
  }
  auto parsed = jinja::Template::Parse(text_of_template);
  if (!parsed.ok()) return InvalidArgumentError(source + ": chat_template: " + parsed.status().message());
  config.erase("chat_template");
  return std::shared_ptr<const CheckpointChatTemplate>(
      new CheckpointChatTemplate(std::move(*parsed), std::move(config), source));
}

StatusOr<std::string> CheckpointChatTemplate::Render(const std::vector<ChatMessage>& messages,
                                                     bool add_generation_prompt, const ordered_json& tools) const {
  if (messages.empty()) return InvalidFieldError("messages", "the conversation is empty");
  ordered_json list = ordered_json::array();
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      return InvalidFieldError("messages[" + std::to_string(i) + "].role",
                               "'" + role + "' is not one of system, user, assistant, tool");
    ordered_json message = {{"role", role}, {"content", messages[i].content}};
    if (!messages[i].tool_calls.empty()) {
      ordered_json calls = ordered_json::array();
      for (const ChatToolCall& c : messages[i].tool_calls) {
        // As an object, as vLLM hands OpenAI's argument text to templates: Qwen2.5's (Dream's)
        // writes `arguments | tojson` whatever it is given; Ling-2.0's takes either.
        ordered_json arguments = ordered_json::parse(c.arguments, nullptr, /*allow_exceptions=*/false);
        if (arguments.is_discarded()) arguments = c.arguments;
        calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", arguments}}}});
      }
      message["tool_calls"] = std::move(calls);
    }
    if (!messages[i].tool_call_id.empty()) message["tool_call_id"] = messages[i].tool_call_id;
    list.push_back(std::move(message));
  }
  auto text = template_.Render(jinja::ChatTemplateContext(config_, list, add_generation_prompt, tools));
  if (!text.ok()) return InvalidArgumentError(source_ + ": chat_template: " + text.status().message());
  return *text;
}

StatusOr<std::vector<int32_t>> EncodeChat(const Tokenizer& tokenizer, const CheckpointChatTemplate* chat_template,
                                          const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  if (chat_template == nullptr) return EncodeChat(tokenizer, messages, add_generation_prompt);
  UNMASK_ASSIGN_OR_RETURN(const std::string prompt, chat_template->Render(messages, add_generation_prompt));
  return tokenizer.Encode(prompt, /*parse_special_tokens=*/true);
}

}  // namespace unmask::tokenizer
