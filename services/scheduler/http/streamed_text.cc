#include "services/scheduler/http/streamed_text.h"

#include <algorithm>

#include "common/generation/canvas.h"
#include "common/util/strings.h"

namespace unmask::scheduler::http {
namespace {

static_assert(kHoleId == generation::kHole, "a template's hole is the generation library's");

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD: what half a character decodes to

// Drops trailing U+FFFD: at the end of a prefix they may be a character whose other bytes are
// in tokens not final yet.
std::string WithoutTrailingReplacement(std::string text) {
  while (text.size() >= 3 && text.compare(text.size() - 3, 3, kReplacement) == 0) text.resize(text.size() - 3);
  return text;
}

}  // namespace

StreamedText::StreamedText(std::shared_ptr<const tokenizer::Tokenizer> tokenizer, TokenIds ids, std::int64_t gen_length,
                           std::vector<std::string> stop, std::vector<std::int64_t> region, bool track_tokens)
    : tokenizer_(std::move(tokenizer)), ids_(ids), region_(std::move(region)),
      tokens_(static_cast<std::size_t>(std::max<std::int64_t>(0, gen_length)), ids.mask), stop_(std::move(stop)),
      track_tokens_(track_tokens), pieces_(tokenizer_.get(), /*skip_special_tokens=*/true) {
  for (std::size_t i = 0; i < region_.size() && i < tokens_.size(); ++i) {
    if (region_[i] != kHoleId) tokens_[i] = region_[i];
  }
}

std::string StreamedText::Decode(const std::vector<std::int64_t>& ids) const {
  return DecodeIds(tokenizer_.get(), ids, /*skip_special_tokens=*/true);
}

std::string StreamedText::CutAtStop(const std::string& text, bool* stopped) const {
  std::size_t cut = std::string::npos;
  for (const auto& s : stop_) cut = std::min(cut, text.find(s));
  *stopped = cut != std::string::npos;
  return *stopped ? text.substr(0, cut) : text;
}

std::size_t StreamedText::HeldBack(const std::string& text) const {
  std::size_t hold = 0;
  for (const auto& s : stop_) {
    for (std::size_t n = std::min(s.size() - 1, text.size()); n > hold; --n) {
      if (text.compare(text.size() - n, n, s, 0, n) == 0) {
        hold = n;
        break;
      }
    }
  }
  return hold;
}

void StreamedText::TakeTokens(const std::vector<std::int64_t>& prefix, Delta& d) {
  const std::vector<std::string>& pieces = pieces_.Update(prefix);
  std::size_t take = sent_tokens_, bytes = sent_token_bytes_;
  std::size_t end = sent_token_bytes_;
  for (std::size_t j = sent_tokens_; j < pieces.size(); ++j) {
    end += pieces[j].size();
    if (end > emitted_.size()) break;
    if (!pieces[j].empty()) {  // tokens without text of their own go out with the next one that has some
      take = j + 1;
      bytes = end;
    }
  }
  for (std::size_t j = sent_tokens_; j < take; ++j) {
    d.ids.push_back(prefix[j]);
    d.pieces.push_back(pieces[j]);
    sent_token_chars_ += CodePoints(pieces[j]);
  }
  sent_tokens_ = take;
  sent_token_bytes_ = bytes;
}

StreamedText::Delta StreamedText::Step(const std::vector<std::int64_t>& positions, const std::vector<std::int64_t>& tokens) {
  for (std::size_t k = 0; k < positions.size() && k < tokens.size(); ++k) {
    const std::int64_t p = positions[k];
    if (p < 0 || p >= static_cast<std::int64_t>(tokens_.size())) continue;
    if (static_cast<std::size_t>(p) < region_.size() && region_[p] != kHoleId) continue;  // fixed: never changes
    tokens_[p] = tokens[k];
  }
  Delta d;
  d.first_token = sent_tokens_;
  d.text_offset = sent_token_chars_;
  if (stopped_) return d;
  // The final prefix: up to the first masked position, or to EOS / EOT (the text ends there;
  // not a template's: its text goes on after it).
  std::vector<std::int64_t> prefix;
  bool ended = false;
  for (auto id : tokens_) {
    if (id == ids_.mask) break;
    if (!is_template() && (id == ids_.eos || id == ids_.eot)) {
      ended = true;
      break;
    }
    prefix.push_back(id);
  }
  bool at_stop = false;
  std::string text = CutAtStop(WithoutTrailingReplacement(Decode(prefix)), &at_stop);
  if (!at_stop && !ended) text.resize(text.size() - HeldBack(text));
  stopped_ = at_stop;
  if (text.size() > emitted_.size() && StartsWith(text, emitted_)) {
    d.text = text.substr(emitted_.size());
    emitted_ = std::move(text);
  }
  if (track_tokens_) TakeTokens(prefix, d);
  return d;
}

std::vector<std::int64_t> StreamedText::TemplateOutput(const std::vector<std::int64_t>& ids) const {
  if (ids.size() == region_.size()) return ids;
  const auto holes = static_cast<std::size_t>(std::count(region_.begin(), region_.end(), kHoleId));
  std::vector<std::int64_t> out = region_;
  if (ids.size() == holes) {  // the holes' tokens alone, in order
    std::size_t k = 0;
    for (auto& id : out) {
      if (id == kHoleId) id = ids[k++];
    }
    return out;
  }
  // Neither: what the steps filled, holes never filled left out.
  out.clear();
  for (auto id : tokens_) {
    if (id != ids_.mask) out.push_back(id);
  }
  return out;
}

StreamedText::Final StreamedText::Finish(const std::vector<std::int64_t>& ids, const std::string& core_finish_reason) {
  Final f;
  std::vector<std::int64_t> kept;
  bool eos = core_finish_reason == "eos";
  if (is_template()) {
    kept = TemplateOutput(ids);
  } else {
    for (auto id : ids) {
      if (id == ids_.eos || id == ids_.eot) {
        eos = true;
        break;
      }
      kept.push_back(id);
    }
  }
  bool at_stop = false;
  f.text = CutAtStop(Decode(kept), &at_stop);
  // A template filled is a whole answer: it ends where the template does.
  f.finish_reason = (is_template() || eos || at_stop) ? "stop" : "length";
  // The streamed text is a prefix of the final text by construction; if a tokenizer ever broke
  // that, the client keeps what it got and the rest is dropped rather than repeated.
  if (StartsWith(f.text, emitted_)) f.delta = f.text.substr(emitted_.size());
  emitted_ = f.text;
  stopped_ = true;
  if (track_tokens_) {
    f.pieces = TokenPieces::Of(tokenizer_.get(), kept, /*skip_special_tokens=*/true);
    if (at_stop) {  // the tokens whose text begins before the cut
      std::size_t n = 0, start = 0;
      while (n < kept.size() && start < f.text.size()) start += f.pieces[n++].size();
      kept.resize(n);
      f.pieces.resize(n);
    }
    f.ids = std::move(kept);
    f.first_unsent = std::min(sent_tokens_, f.ids.size());
    sent_tokens_ = f.ids.size();
  }
  return f;
}

}  // namespace unmask::scheduler::http
