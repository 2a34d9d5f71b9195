// Hugging Face's SplitDelimiterBehavior: how the matches of a pattern cut a string into pieces.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "common/tokenizer/regex.h"
#include "common/util/status.h"

namespace unmask::tokenizer {

enum class SplitBehavior {
  kRemoved,             // matches are dropped
  kIsolated,            // matches become pieces of their own
  kMergedWithPrevious,  // a match is appended to the piece before it
  kMergedWithNext,      // a match is prepended to the piece after it
  kContiguous,          // consecutive matches form one piece
};

// Parses "Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous".
StatusOr<SplitBehavior> ParseSplitBehavior(std::string_view name);

// A piece of the input: byte range plus whether it came from a match.
struct Span {
  size_t begin = 0;
  size_t end = 0;
  bool is_match = false;
};

// Turns sorted, non-overlapping matches into spans that cover [0, length) exactly.
std::vector<Span> MatchesToSpans(const std::vector<Match>& matches, size_t length);

// Spans for a per-character predicate: every matching character is its own match span, runs of
// other characters are one non-match span (Hugging Face's `impl Pattern for Fn(char) -> bool`).
std::vector<Span> CharSpans(std::string_view text, const std::function<bool(char32_t)>& pred);

// Applies `invert` (matches and non-matches swap roles) and `behavior`, and returns the byte
// ranges of the resulting pieces, empty ones dropped, in order.
std::vector<Span> ApplySplitBehavior(std::vector<Span> spans, SplitBehavior behavior, bool invert);

}  // namespace unmask::tokenizer
