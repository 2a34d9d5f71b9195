// The token streams and chat pairs the trainer learns from, made from a verse corpus with the
// model's own tokenizer. No LibTorch here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tokenizer/chat_template.h"
#include "common/tokenizer/tokenizer.h"
#include "tools/train/verse_corpus.h"

namespace unmask::train {

// The special tokens of unmask's trained tokenizers, in id order (0, 1, ...): EOS/padding first.
std::vector<std::string> TrainedSpecialTokens();

// Every chapter's text followed by EOS, chapters in corpus order.
StatusOr<std::vector<std::int32_t>> TokenStream(const std::vector<Chapter>& chapters, const tokenizer::Tokenizer& tok,
                                                std::int32_t eos_id);

// A supervised chat pair: `prompt` is the chat template up to the assistant header, `answer` the
// reply followed by EOT (the trainer pads it with EOS). Only the answer is ever masked.
struct ChatExample {
  std::string question, reply;
  std::vector<std::int32_t> prompt, answer;
};

// Two pairs per verse: "What does <Book> <c>:<v> say?" -> the verse, and "Finish the verse:
// <first half>" -> its second half. Pairs that do not fit in `max_length` tokens are left out.
StatusOr<std::vector<ChatExample>> MakeChatExamples(const std::vector<Chapter>& chapters, const tokenizer::Tokenizer& tok,
                                                    const tokenizer::ChatTokenIds& ids, std::int64_t max_length);

}  // namespace unmask::train
