// The chat template of inclusionAI's Ling-2.0 family, which LLaDA-MoE and LLaDA2.x ship in their
// tokenizer_config.json, built in (no Jinja). For messages m0..mn (no tools) it renders
//
//   <role>SYSTEM</role>{system content}\ndetailed thinking off<|role_end|>   (the "{...}\n" only
//                                                                           when m0 is a system message)
//   <role>HUMAN</role>{content}<|role_end|>                                  (each user message)
//   <role>SYSTEM</role>{content}<|role_end|>                                 (a later system message)
//   <role>ASSISTANT</role>{content}<|role_end|>                              (each assistant message)
//   <role>ASSISTANT</role>                                                    (if add_generation_prompt)
//
// as that template does: contents are not trimmed; an assistant message's `<think>...</think>`
// part is dropped, except after the last user message, where it is kept as
// "\n<think>\n{reasoning}\n</think>\n\n" before the answer.
#pragma once

#include <string>
#include <vector>

#include "common/tokenizer/chat_template.h"

namespace unmask::tokenizer {

namespace ling {
inline constexpr char kRoleOpen[] = "<role>";
inline constexpr char kRoleClose[] = "</role>";
inline constexpr char kRoleEnd[] = "<|role_end|>";
}  // namespace ling

// InvalidArgument for an empty conversation or an unknown role, naming the message index.
StatusOr<std::string> ApplyLingChatTemplate(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true);

// True when `tokenizer` has the Ling template's special tokens (<role>, </role>, <|role_end|>).
bool HasLingChatTokens(const Tokenizer& tokenizer);

}  // namespace unmask::tokenizer
