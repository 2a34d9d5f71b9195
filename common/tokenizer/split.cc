#include "common/tokenizer/split.h"

#include <algorithm>
#include <string>

#include "common/tokenizer/utf8.h"

namespace unmask::tokenizer {

StatusOr<SplitBehavior> ParseSplitBehavior(std::string_view name) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return InvalidArgumentError("unknown split behavior '" + std::string(name) +
                              "' (expected Removed, Isolated, MergedWithPrevious, MergedWithNext or "
                              "Contiguous)");
}

std::vector<Span> MatchesToSpans(const std::vector<Match>& matches, size_t length) {
  std::vector<Span> spans;
  spans.reserve(matches.size() * 2 + 1);
  size_t prev = 0;
  for (const Match& m : matches) {
    if (m.begin > prev) spans.push_back(Span{prev, m.begin, false});
    spans.push_back(Span{m.begin, m.end, true});
    prev = m.end;
  }
  if (prev < length) spans.push_back(Span{prev, length, false});
  return spans;
}

std::vector<Span> CharSpans(std::string_view text, const std::function<bool(char32_t)>& pred) {
  std::vector<Span> spans;
  size_t last = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t begin = pos;
    const char32_t c = NextCodePoint(text, &pos);
    if (pred(c)) {
      if (last < begin) spans.push_back(Span{last, begin, false});
      spans.push_back(Span{begin, pos, true});
      last = pos;
    }
  }
  if (last < text.size()) spans.push_back(Span{last, text.size(), false});
  return spans;
}

std::vector<Span> ApplySplitBehavior(std::vector<Span> spans, SplitBehavior behavior, bool invert) {
  if (invert) {
    for (Span& s : spans) s.is_match = !s.is_match;
  }
  // Each arm follows tokenizers' NormalizedString::split; in the result, is_match means "drop".
  std::vector<Span> acc;
  acc.reserve(spans.size());
  switch (behavior) {
    case SplitBehavior::kRemoved:
      acc = std::move(spans);
      break;
    case SplitBehavior::kIsolated:
      for (Span s : spans) acc.push_back(Span{s.begin, s.end, false});
      break;
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Span& s : spans) {
        if (s.is_match == previous_match && !acc.empty()) {
          acc.back().end = s.end;
        } else {
          acc.push_back(Span{s.begin, s.end, false});
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Span& s : spans) {
        if (s.is_match && !previous_match && !acc.empty()) {
          acc.back().end = s.end;
        } else {
          acc.push_back(Span{s.begin, s.end, false});
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !acc.empty()) {
          acc.back().begin = it->begin;
        } else {
          acc.push_back(Span{it->begin, it->end, false});
        }
        previous_match = it->is_match;
      }
      std::reverse(acc.begin(), acc.end());
      break;
    }
  }
  std::vector<Span> out;
  out.reserve(acc.size());
  for (const Span& s : acc) {
    if (!s.is_match && s.end > s.begin) out.push_back(s);
  }
  return out;
}

}  // namespace unmask::tokenizer
