// The infilling cases of bench_infill: held-out verses cut into prefix | gap | suffix at word
// boundaries of the model's own tokenization. No LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "common/util/status.h"
#include "tools/train/verse_corpus.h"

namespace unmask::bench {

// How a verse is cut. Each verse is encoded on its own (as the first text of a prompt); a token
// starts a word when its text starts with a space (and the verse's first token does). The prefix
// is the fewest whole words with at least min_prefix tokens. The gap's target length cycles over
// min_gap..max_gap with the verse's index in `chapters` (every verse counted: verse n targets
// min_gap + n mod (max_gap - min_gap + 1)), and the gap is the fewest whole words after the prefix
// with at least that many tokens, at most max_gap. The suffix is the rest of the verse, at least
// min_suffix tokens. A verse that cannot be cut so is left out.
struct InfillRule {
  std::int64_t min_prefix = 6;
  std::int64_t min_gap = 8, max_gap = 16;
  std::int64_t min_suffix = 4;
};

struct InfillCase {
  std::string where;  // "Genesis 50:3"
  std::vector<std::int64_t> prefix, gap, suffix;
  std::string prefix_text, gap_text, suffix_text;
};

// Indices of the tokens that start a word (0 always: a token starts one when its text starts with
// a space), then ids.size() as the end.
StatusOr<std::vector<std::size_t>> WordStarts(const std::vector<std::int32_t>& ids, const tokenizer::Tokenizer& tok);

// The gap's words in reverse order (the same tokens): the scoring benchmarks' "order" test.
std::vector<std::int64_t> ReverseWords(const std::vector<std::int64_t>& gap, const tokenizer::Tokenizer& tok);

// Every verse of `chapters` (in order) that the rule can cut.
StatusOr<std::vector<InfillCase>> MakeInfillCases(const std::vector<train::Chapter>& chapters,
                                                  const tokenizer::Tokenizer& tok, const InfillRule& rule);

// `n` cases evenly spaced over `all` (all of them when n <= 0 or n >= their number).
std::vector<InfillCase> EvenlySpaced(const std::vector<InfillCase>& all, std::int64_t n);

}  // namespace unmask::bench
