#include "common/tokenizer/ling_chat_template.h"

#include <algorithm>
#include <optional>

#include "common/util/strings.h"

namespace unmask::tokenizer {
namespace {

std::string Role(const std::string& name) { return std::string(ling::kRoleOpen) + name + ling::kRoleClose; }

// Python's s.strip(chars) / lstrip / rstrip with one character.
std::string LStrip(const std::string& s, char c) { return s.substr(std::min(s.find_first_not_of(c), s.size())); }
std::string RStrip(const std::string& s, char c) {
  const auto last = s.find_last_not_of(c);
  return last == std::string::npos ? "" : s.substr(0, last + 1);
}

// The template's last_query_index: the last user message that is not a wrapped tool response,
// or the last index if there is none.
std::size_t LastQuery(const std::vector<ChatMessage>& messages) {
  for (std::size_t i = messages.size(); i-- > 0;) {
    const std::string& c = messages[i].content;
    if (messages[i].role == "user" && !(StartsWith(c, "<tool_response>") && EndsWith(c, "</tool_response>"))) return i;
  }
  return messages.size() - 1;
}

// An assistant turn: the reasoning in <think>...</think> is split off the content; it is shown
// only after the last user message.
std::string AssistantTurn(std::string content, bool after_last_query) {
  std::string reasoning;
  const std::string close = "</think>";
  if (const auto first_close = content.find(close); first_close != std::string::npos) {
    std::string before = RStrip(content.substr(0, first_close), '\n');
    if (const auto open = before.rfind("<think>"); open != std::string::npos) before = before.substr(open + 7);
    reasoning = LStrip(before, '\n');
    content = LStrip(content.substr(content.rfind(close) + close.size()), '\n');
  }
  if (after_last_query && !reasoning.empty())
    return Role("ASSISTANT") + "\n<think>\n" + RStrip(LStrip(reasoning, '\n'), '\n') + "\n</think>\n\n" + LStrip(content, '\n');
  return Role("ASSISTANT") + content;
}

}  // namespace

StatusOr<std::string> ApplyLingChatTemplate(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  if (messages.empty()) return InvalidArgumentError("chat template: the conversation has no messages");
  UNMASK_RETURN_IF_ERROR(CheckNoToolTurns(messages));
  std::string out = Role("SYSTEM");
  if (messages[0].role == "system") out += messages[0].content + "\n";
  out += std::string("detailed thinking off") + ling::kRoleEnd;
  const std::size_t last_query = LastQuery(messages);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user") {
      out += Role("HUMAN") + m.content + ling::kRoleEnd;
    } else if (m.role == "system") {
      if (i > 0) out += Role("SYSTEM") + m.content + ling::kRoleEnd;
    } else if (m.role == "assistant") {
      out += AssistantTurn(m.content, i > last_query) + ling::kRoleEnd;
    } else {
      return InvalidArgumentError("chat template: messages[" + std::to_string(i) + "]: unknown role '" + m.role +
                                  "' (expected user, assistant or system)");
    }
  }
  if (add_generation_prompt) out += Role("ASSISTANT");
  return out;
}

bool HasLingChatTokens(const Tokenizer& tokenizer) {
  for (const char* text : {ling::kRoleOpen, ling::kRoleClose, ling::kRoleEnd}) {
    const std::optional<int32_t> id = tokenizer.TokenToId(text);
    if (!id || !tokenizer.IsSpecialToken(*id)) return false;
  }
  return true;
}

}  // namespace unmask::tokenizer
