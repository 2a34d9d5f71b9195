#include "tools/train/training_data.h"

#include <sstream>

namespace unmask::train {

std::vector<std::string> TrainedSpecialTokens() {
  namespace l = tokenizer::llada;
  return {l::kEos, l::kBos, l::kMask, l::kStartHeader, l::kEndHeader, l::kEot};
}

StatusOr<std::vector<std::int32_t>> TokenStream(const std::vector<Chapter>& chapters, const tokenizer::Tokenizer& tok,
                                                std::int32_t eos_id) {
  std::vector<std::int32_t> out;
  for (const auto& c : chapters) {
    UNMASK_ASSIGN_OR_RETURN(auto ids, tok.Encode(c.Text(), /*parse_special_tokens=*/false));
    out.insert(out.end(), ids.begin(), ids.end());
    out.push_back(eos_id);
  }
  return out;
}

namespace {

// The verse's words split in two halves (first half rounded down), or false for a short verse.
bool SplitVerse(const std::string& text, std::string* head, std::string* tail) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  if (words.size() < 6) return false;
  const size_t half = words.size() / 2;
  head->clear();
  tail->clear();
  for (size_t i = 0; i < words.size(); ++i) {
    std::string& dst = i < half ? *head : *tail;
    dst += (dst.empty() ? "" : " ") + words[i];
  }
  return true;
}

}  // namespace

StatusOr<std::vector<ChatExample>> MakeChatExamples(const std::vector<Chapter>& chapters, const tokenizer::Tokenizer& tok,
                                                    const tokenizer::ChatTokenIds& ids, std::int64_t max_length) {
  std::vector<ChatExample> out;
  auto add = [&](std::string question, std::string reply) -> Status {
    UNMASK_ASSIGN_OR_RETURN(const std::string prompt, tokenizer::ApplyLladaChatTemplate({{"user", question}}));
    ChatExample e{std::move(question), std::move(reply), {}, {}};
    UNMASK_ASSIGN_OR_RETURN(e.prompt, tok.Encode(prompt, /*parse_special_tokens=*/true));
    UNMASK_ASSIGN_OR_RETURN(e.answer, tok.Encode(e.reply, /*parse_special_tokens=*/false));
    e.answer.push_back(ids.eot);
    if (static_cast<std::int64_t>(e.prompt.size() + e.answer.size()) < max_length) out.push_back(std::move(e));
    return OkStatus();
  };
  for (const auto& c : chapters) {
    for (const auto& v : c.verses) {
      UNMASK_RETURN_IF_ERROR(add("What does " + BookName(v.book) + " " + std::to_string(v.chapter) + ":" +
                                     std::to_string(v.verse) + " say?",
                                 v.text));
      std::string head, tail;
      if (SplitVerse(v.text, &head, &tail)) UNMASK_RETURN_IF_ERROR(add("Finish the verse: " + head, tail));
    }
  }
  return out;
}

}  // namespace unmask::train
