#include "services/scheduler/http/streamed_text.h"

#include <algorithm>
#include <climits>

#include "common/util/strings.h"

namespace unmask::scheduler::http {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD: what half a character decodes to

// Drops trailing U+FFFD: at the end of a prefix they may be a character whose other bytes are
// in tokens not final yet.
std::string WithoutTrailingReplacement(std::string text) {
  while (text.size() >= 3 && text.compare(text.size() - 3, 3, kReplacement) == 0) text.resize(text.size() - 3);
  return text;
}

}  // namespace

StreamedText::StreamedText(std::shared_ptr<const tokenizer::Tokenizer> tokenizer, TokenIds ids, std::int64_t gen_length,
                           std::vector<std::string> stop)
    : tokenizer_(std::move(tokenizer)), ids_(ids), tokens_(static_cast<std::size_t>(std::max<std::int64_t>(0, gen_length)), ids.mask),
      stop_(std::move(stop)) {}

std::string StreamedText::Decode(const std::vector<std::int64_t>& ids) const {
  if (!tokenizer_) return "";
  std::vector<std::int32_t> known;
  known.reserve(ids.size());
  for (auto id : ids) {
    if (id >= 0 && id <= INT32_MAX && tokenizer_->IdToToken(static_cast<std::int32_t>(id))) known.push_back(static_cast<std::int32_t>(id));
  }
  auto text = tokenizer_->Decode(known, /*skip_special_tokens=*/true);
  return text.ok() ? *text : "";
}

std::string StreamedText::CutAtStop(const std::string& text, bool* stopped) const {
  std::size_t cut = std::string::npos;
  for (const auto& s : stop_) cut = std::min(cut, text.find(s));
  *stopped = cut != std::string::npos;
  return *stopped ? text.substr(0, cut) : text;
}

std::string StreamedText::OnStep(const std::vector<std::int64_t>& positions, const std::vector<std::int64_t>& tokens) {
  for (std::size_t k = 0; k < positions.size() && k < tokens.size(); ++k) {
    if (positions[k] >= 0 && positions[k] < static_cast<std::int64_t>(tokens_.size())) tokens_[positions[k]] = tokens[k];
  }
  if (stopped_) return "";
  // The final prefix: up to the first masked position, or to EOS / EOT (the text ends there).
  std::vector<std::int64_t> prefix;
  bool ended = false;
  for (auto id : tokens_) {
    if (id == ids_.mask) break;
    if (id == ids_.eos || id == ids_.eot) {
      ended = true;
      break;
    }
    prefix.push_back(id);
  }
  bool at_stop = false;
  std::string text = CutAtStop(WithoutTrailingReplacement(Decode(prefix)), &at_stop);
  if (!at_stop && !ended) {
    // Hold back the longest tail that a stop string could still begin with.
    std::size_t hold = 0;
    for (const auto& s : stop_) {
      for (std::size_t n = std::min(s.size() - 1, text.size()); n > hold; --n) {
        if (text.compare(text.size() - n, n, s, 0, n) == 0) {
          hold = n;
          break;
        }
      }
    }
    text.resize(text.size() - hold);
  }
  stopped_ = at_stop;
  if (text.size() <= emitted_.size() || !StartsWith(text, emitted_)) return "";
  std::string delta = text.substr(emitted_.size());
  emitted_ = std::move(text);
  return delta;
}

StreamedText::Final StreamedText::Finish(const std::vector<std::int64_t>& ids, const std::string& core_finish_reason) {
  Final f;
  std::vector<std::int64_t> kept;
  bool eos = core_finish_reason == "eos";
  for (auto id : ids) {
    if (id == ids_.eos || id == ids_.eot) {
      eos = true;
      break;
    }
    kept.push_back(id);
  }
  bool at_stop = false;
  f.text = CutAtStop(Decode(kept), &at_stop);
  f.finish_reason = (eos || at_stop) ? "stop" : "length";
  // The streamed text is a prefix of the final text by construction; if a tokenizer ever broke
  // that, the client keeps what it got and the rest is dropped rather than repeated.
  if (StartsWith(f.text, emitted_)) f.delta = f.text.substr(emitted_.size());
  emitted_ = f.text;
  stopped_ = true;
  return f;
}

}  // namespace unmask::scheduler::http
