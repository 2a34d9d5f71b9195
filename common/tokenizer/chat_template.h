// The LLaDA-8B-Instruct chat template, built in (no Jinja). For messages m0..mn it produces
//
//   <|startoftext|>                                              (BOS, once, at the very start)
//   <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>   (for every message)
//   <|start_header_id|>assistant<|end_header_id|>\n\n            (if add_generation_prompt)
//
// which is what the model's tokenizer_config.json Jinja template renders: later turns carry no
// BOS, earlier assistant answers end with <|eot_id|> (never <|endoftext|>), and an optional system
// message comes first, right after the BOS. As in that template (Jinja `| trim`), each content
// has leading and trailing whitespace removed.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "common/util/status.h"

namespace unmask::tokenizer {

// LLaDA's special tokens and their ids in its tokenizer.json.
namespace llada {
inline constexpr char kBos[] = "<|startoftext|>";
inline constexpr char kEos[] = "<|endoftext|>";
inline constexpr char kMask[] = "<|mdm_mask|>";
inline constexpr char kStartHeader[] = "<|start_header_id|>";
inline constexpr char kEndHeader[] = "<|end_header_id|>";
inline constexpr char kEot[] = "<|eot_id|>";
inline constexpr int32_t kBosId = 126080;
inline constexpr int32_t kEosId = 126081;
inline constexpr int32_t kMaskId = 126336;
inline constexpr int32_t kStartHeaderId = 126346;
inline constexpr int32_t kEndHeaderId = 126347;
inline constexpr int32_t kEotId = 126348;
}  // namespace llada

// A call an assistant turn made (OpenAI's tool_calls[i]): rendered back by a checkpoint's chat
// template as {"id", "type": "function", "function": {"name", "arguments"}}.
struct ChatToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // a JSON object, as text (as OpenAI clients send it); the template gets the object
};

struct ChatMessage {
  ChatMessage() = default;
  ChatMessage(std::string role_, std::string content_, std::vector<ChatToolCall> tool_calls_ = {},
              std::string tool_call_id_ = {})
      : role(std::move(role_)), content(std::move(content_)), tool_calls(std::move(tool_calls_)),
        tool_call_id(std::move(tool_call_id_)) {}

  // "user", "assistant" or "system" (system only as the first message); "tool" (a tool's answer)
  // only with a checkpoint's own chat template, as are tool_calls: the built-in templates refuse
  // both.
  std::string role;
  std::string content;
  std::vector<ChatToolCall> tool_calls;  // assistant
  std::string tool_call_id;              // tool
};

// InvalidArgument naming the first message with tool calls or the tool role: the built-in
// templates (this one and ling_chat_template.h) have no place for them.
Status CheckNoToolTurns(const std::vector<ChatMessage>& messages);

// Renders the template. InvalidArgument for an empty conversation, an unknown role, or a system
// message anywhere but first; the message names the offending message index.
StatusOr<std::string> ApplyLladaChatTemplate(const std::vector<ChatMessage>& messages,
                                             bool add_generation_prompt = true);

// The ids a tokenizer gives the six LLaDA special-token strings. LLaDA-8B has the llada::k*Id
// numbers; a checkpoint with its own tokenizer (e.g. unmask's trained model) has its own.
struct ChatTokenIds {
  int32_t bos = llada::kBosId, eos = llada::kEosId, mask = llada::kMaskId;
  int32_t start_header = llada::kStartHeaderId, end_header = llada::kEndHeaderId, eot = llada::kEotId;
};

// Looks the six strings up in `tokenizer`: each must be a special added token (at any id).
// FailedPrecondition naming the first one that is absent or not special.
StatusOr<ChatTokenIds> FindChatTokenIds(const Tokenizer& tokenizer);
// FindChatTokenIds without the ids.
Status CheckLladaSpecialTokens(const Tokenizer& tokenizer);

// Renders the template and encodes it with special-token parsing on (what
// `tokenizer(apply_chat_template(...))` does in transformers). Checks the special tokens first so
// that a wrong tokenizer fails loudly instead of spelling "<|eot_id|>" out as plain text.
// Note: like the reference, special-token strings typed inside a message's content are parsed
// as special tokens too.
StatusOr<std::vector<int32_t>> EncodeLladaChat(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                               bool add_generation_prompt = true);

// The chat template the checkpoint's tokenizer was made for, rendered and encoded: the Ling-2.0
// template (ling_chat_template.h: LLaDA-MoE, LLaDA2.x) when the tokenizer has its special tokens,
// else LLaDA's (EncodeLladaChat, with its checks).
StatusOr<std::vector<int32_t>> EncodeChat(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                          bool add_generation_prompt = true);

}  // namespace unmask::tokenizer
