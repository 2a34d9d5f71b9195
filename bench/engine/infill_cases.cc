#include "bench/engine/infill_cases.h"

#include "bench/common/bench_report.h"

#include <algorithm>

namespace unmask::bench {

StatusOr<std::vector<std::size_t>> WordStarts(const std::vector<std::int32_t>& ids, const tokenizer::Tokenizer& tok) {
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    StatusOr<std::string> text = tok.Decode(&ids[i], 1, false);
    if (!text.ok()) return text.status();
    if (i == 0 || (!text->empty() && text->front() == ' ')) starts.push_back(i);
  }
  starts.push_back(ids.size());
  return starts;
}

namespace {

StatusOr<std::string> DecodeRange(const tokenizer::Tokenizer& tok, const std::vector<std::int32_t>& ids,
                                  std::size_t from, std::size_t to) {
  return tok.Decode(ids.data() + from, to - from, false);
}

}  // namespace

StatusOr<std::vector<InfillCase>> MakeInfillCases(const std::vector<train::Chapter>& chapters,
                                                  const tokenizer::Tokenizer& tok, const InfillRule& rule) {
  if (rule.min_gap < 1 || rule.max_gap < rule.min_gap) return InvalidArgumentError("need 1 <= min_gap <= max_gap");
  std::vector<InfillCase> cases;
  std::int64_t n = 0;  // every verse counted, cut or not
  for (const auto& chapter : chapters) {
    for (const auto& verse : chapter.verses) {
      const std::int64_t target = rule.min_gap + n++ % (rule.max_gap - rule.min_gap + 1);
      UNMASK_ASSIGN_OR_RETURN(std::vector<std::int32_t> ids, tok.Encode(verse.text, false));
      UNMASK_ASSIGN_OR_RETURN(std::vector<std::size_t> starts, WordStarts(ids, tok));
      // The prefix ends at the first word start with at least min_prefix tokens before it.
      auto p = std::find_if(starts.begin(), starts.end(),
                            [&](std::size_t s) { return static_cast<std::int64_t>(s) >= rule.min_prefix; });
      if (p == starts.end()) continue;
      // The gap ends at the first word start at least `target` tokens after the prefix.
      auto q = std::find_if(p, starts.end(), [&](std::size_t s) { return static_cast<std::int64_t>(s - *p) >= target; });
      if (q == starts.end()) continue;
      const std::size_t gap_end = *q;
      const auto gap = static_cast<std::int64_t>(gap_end - *p);
      const auto suffix = static_cast<std::int64_t>(ids.size() - gap_end);
      if (gap > rule.max_gap || suffix < rule.min_suffix) continue;
      InfillCase c;
      c.where = train::BookName(verse.book) + " " + std::to_string(verse.chapter) + ":" + std::to_string(verse.verse);
      c.prefix.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(*p));
      c.gap.assign(ids.begin() + static_cast<std::ptrdiff_t>(*p), ids.begin() + static_cast<std::ptrdiff_t>(gap_end));
      c.suffix.assign(ids.begin() + static_cast<std::ptrdiff_t>(gap_end), ids.end());
      UNMASK_ASSIGN_OR_RETURN(c.prefix_text, DecodeRange(tok, ids, 0, *p));
      UNMASK_ASSIGN_OR_RETURN(c.gap_text, DecodeRange(tok, ids, *p, gap_end));
      UNMASK_ASSIGN_OR_RETURN(c.suffix_text, DecodeRange(tok, ids, gap_end, ids.size()));
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

std::vector<InfillCase> EvenlySpaced(const std::vector<InfillCase>& all, std::int64_t n) {
  if (n <= 0 || n >= static_cast<std::int64_t>(all.size())) return all;
  std::vector<InfillCase> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(all[static_cast<std::size_t>(i) * all.size() / n]);
  return out;
}

std::vector<std::int64_t> ReverseWords(const std::vector<std::int64_t>& gap, const tokenizer::Tokenizer& tok) {
  const std::vector<std::int32_t> ids(gap.begin(), gap.end());
  const auto starts = Check(WordStarts(ids, tok), "word starts");
  std::vector<std::int64_t> out;
  for (std::size_t w = starts.size() - 1; w-- > 0;) out.insert(out.end(), gap.begin() + starts[w], gap.begin() + starts[w + 1]);
  return out;
}

}  // namespace unmask::bench
