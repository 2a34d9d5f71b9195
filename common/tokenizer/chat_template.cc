#include "common/tokenizer/chat_template.h"

#include "common/tokenizer/ling_chat_template.h"
#include "common/tokenizer/unicode.h"
#include "common/tokenizer/utf8.h"

namespace unmask::tokenizer {
namespace {

// Jinja's `trim` filter is Python's str.strip(): Unicode whitespace on both ends. Content that is
// not valid UTF-8 is left as is here; encoding reports it with its byte offset.
std::string Trim(const std::string& s) {
  if (FindInvalidUtf8(s) != kNoInvalidUtf8) return s;
  size_t begin = 0;
  size_t end = s.size();
  while (begin < end) {
    size_t next = begin;
    if (!IsWhitespace(NextCodePoint(s, &next))) break;
    begin = next;
  }
  while (end > begin) {
    size_t prev = end;
    if (!IsWhitespace(PrevCodePoint(s, &prev))) break;
    end = prev;
  }
  return s.substr(begin, end - begin);
}

void AppendTurn(const std::string& role, const std::string& content, std::string* out) {
  *out += llada::kStartHeader;
  *out += role;
  *out += llada::kEndHeader;
  *out += "\n\n";
  *out += content;
}

}  // namespace

Status CheckNoToolTurns(const std::vector<ChatMessage>& messages) {
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].tool_calls.empty() && messages[i].role != "tool") continue;
    return InvalidArgumentError("chat template: messages[" + std::to_string(i) +
                                "]: tool calls and tool answers need the checkpoint's own chat template "
                                "(tokenizer_config.json's chat_template); the built-in template has no place for them");
  }
  return OkStatus();
}

StatusOr<std::string> ApplyLladaChatTemplate(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  if (messages.empty()) return InvalidArgumentError("chat template: the conversation has no messages");
  UNMASK_RETURN_IF_ERROR(CheckNoToolTurns(messages));
  std::string out = llada::kBos;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const std::string where = "chat template: messages[" + std::to_string(i) + "]";
    if (m.role == "system") {
      if (i != 0) return InvalidArgumentError(where + ": a system message is only allowed first");
    } else if (m.role != "user" && m.role != "assistant") {
      return InvalidArgumentError(where + ": unknown role '" + m.role + "' (expected user, assistant or system)");
    }
    AppendTurn(m.role, Trim(m.content), &out);
    out += llada::kEot;
  }
  if (add_generation_prompt) AppendTurn("assistant", "", &out);
  return out;
}

StatusOr<ChatTokenIds> FindChatTokenIds(const Tokenizer& tokenizer) {
  ChatTokenIds ids;
  const std::pair<const char*, int32_t*> wanted[] = {
      {llada::kBos, &ids.bos},          {llada::kEos, &ids.eos},
      {llada::kMask, &ids.mask},        {llada::kStartHeader, &ids.start_header},
      {llada::kEndHeader, &ids.end_header}, {llada::kEot, &ids.eot},
  };
  for (const auto& [text, id] : wanted) {
    const std::optional<int32_t> actual = tokenizer.TokenToId(text);
    if (!actual || !tokenizer.IsSpecialToken(*actual)) {
      return FailedPreconditionError(tokenizer.source() + ": not a LLaDA-style tokenizer: '" + text +
                                     "' should be a special token but is " +
                                     (actual ? "id " + std::to_string(*actual) + " (not special)" : std::string("absent")));
    }
    *id = *actual;
  }
  return ids;
}

Status CheckLladaSpecialTokens(const Tokenizer& tokenizer) { return FindChatTokenIds(tokenizer).status(); }

StatusOr<std::vector<int32_t>> EncodeLladaChat(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                               bool add_generation_prompt) {
  UNMASK_RETURN_IF_ERROR(CheckLladaSpecialTokens(tokenizer));
  UNMASK_ASSIGN_OR_RETURN(const std::string prompt, ApplyLladaChatTemplate(messages, add_generation_prompt));
  return tokenizer.Encode(prompt, /*parse_special_tokens=*/true);
}

StatusOr<std::vector<int32_t>> EncodeChat(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                          bool add_generation_prompt) {
  if (!HasLingChatTokens(tokenizer)) return EncodeLladaChat(tokenizer, messages, add_generation_prompt);
  UNMASK_ASSIGN_OR_RETURN(const std::string prompt, ApplyLingChatTemplate(messages, add_generation_prompt));
  return tokenizer.Encode(prompt, /*parse_special_tokens=*/true);
}

}  // namespace unmask::tokenizer
