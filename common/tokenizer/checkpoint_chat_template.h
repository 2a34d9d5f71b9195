// The chat template a checkpoint ships: the Jinja2 `chat_template` of its tokenizer_config.json,
// parsed once and rendered as transformers' apply_chat_template renders it (common/jinja), with the
// special tokens of that file (bos_token, eos_token, ...) as variables. This is how every
// checkpoint's chat prompt is made when it ships a template (LLaDA-8B-Instruct, LLaDA-MoE and
// LLaDA2.x with Ling-2.0's, Dream with Qwen2.5's, unmask's own model); the built-in templates of
// chat_template.h and ling_chat_template.h serve checkpoints that ship none.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/jinja/chat_template.h"
#include "common/tokenizer/chat_template.h"
#include "common/util/status.h"

namespace unmask::tokenizer {

class CheckpointChatTemplate {
 public:
  // From tokenizer_config.json at `path`: its chat_template (a string, or a list of {name,
  // template} from which "default" is taken). Null (not an error) when the file is absent or has
  // no template. Errors name the file: not JSON, a template of the wrong type, a template that
  // does not parse (with its line:column).
  static StatusOr<std::shared_ptr<const CheckpointChatTemplate>> FromTokenizerConfig(const std::string& path);
  // The same from the file's text (`source` names it in errors).
  static StatusOr<std::shared_ptr<const CheckpointChatTemplate>> FromText(const std::string& text,
                                                                          const std::string& source);

  // The prompt text. InvalidArgument for an empty conversation or a role other than system,
  // user, assistant or tool (naming the message index), and for what the template itself refuses
  // (raise_exception) or fails on, naming the template's line:column. `tools`: the template's
  // `tools` variable (OpenAI's tool objects; null for none), as apply_chat_template(tools=...)
  // passes it. An assistant message's tool_calls and a tool message's tool_call_id reach the
  // template as OpenAI's message objects carry them.
  StatusOr<std::string> Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true,
                               const nlohmann::ordered_json& tools = nullptr) const;

  const std::string& source() const { return source_; }

 private:
  CheckpointChatTemplate(jinja::Template t, nlohmann::ordered_json config, std::string source)
      : template_(std::move(t)), config_(std::move(config)), source_(std::move(source)) {}

  jinja::Template template_;
  nlohmann::ordered_json config_;  // tokenizer_config.json, for the special tokens
  std::string source_;
};

// The chat prompt's ids: `chat_template` rendered when given (special tokens parsed, as
// transformers' apply_chat_template(tokenize=True) encodes), else the built-in template
// (EncodeChat).
StatusOr<std::vector<int32_t>> EncodeChat(const Tokenizer& tokenizer, const CheckpointChatTemplate* chat_template,
                                          const std::vector<ChatMessage>& messages, bool add_generation_prompt = true);

}  // namespace unmask::tokenizer
