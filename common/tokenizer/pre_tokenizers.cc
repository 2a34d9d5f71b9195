#include "common/tokenizer/pre_tokenizers.h"

#include <utility>

#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/unicode.h"
#include "common/tokenizer/utf8.h"

namespace unmask::tokenizer {
namespace {

// Replaces every piece by the pieces `spans_of(piece.text)` selects. spans_of must return the
// kept ranges in order (the output of ApplySplitBehavior).
template <typename SpansOf>
Status SplitPieces(std::vector<Piece>* pieces, SpansOf spans_of) {
  std::vector<Piece> out;
  out.reserve(pieces->size());
  std::vector<Span> spans;
  for (Piece& piece : *pieces) {
    UNMASK_RETURN_IF_ERROR(spans_of(piece.text, &spans));
    for (const Span& s : spans) {
      out.push_back(Piece{piece.text.substr(s.begin, s.end - s.begin), piece.at_start && s.begin == 0});
    }
  }
  *pieces = std::move(out);
  return OkStatus();
}

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, std::shared_ptr<const Regex> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}

  Status PreTokenize(std::vector<Piece>* pieces) const override {
    if (add_prefix_space_) {
      for (Piece& p : *pieces) {
        if (!p.text.empty() && p.text[0] != ' ') p.text.insert(0, 1, ' ');
      }
    }
    std::vector<Match> matches;
    std::vector<Piece> out;
    out.reserve(regex_ ? pieces->size() * 4 : pieces->size());
    for (const Piece& p : *pieces) {
      if (regex_) {
        matches.clear();
        UNMASK_RETURN_IF_ERROR(regex_->FindAll(p.text, &matches));
        for (const Span& s : ApplySplitBehavior(MatchesToSpans(matches, p.text.size()),
                                                SplitBehavior::kIsolated, false)) {
          out.push_back(Piece{{}, p.at_start && s.begin == 0});
          out.back().text.reserve((s.end - s.begin) * 2);
          AppendByteLevel(std::string_view(p.text).substr(s.begin, s.end - s.begin), &out.back().text);
        }
      } else if (!p.text.empty()) {
        out.push_back(Piece{{}, p.at_start});
        out.back().text.reserve(p.text.size() * 2);
        AppendByteLevel(p.text, &out.back().text);
      }
    }
    *pieces = std::move(out);
    return OkStatus();
  }

 private:
  bool add_prefix_space_;
  std::shared_ptr<const Regex> regex_;  // null when use_regex is false
};

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}

  Status PreTokenize(std::vector<Piece>* pieces) const override {
    std::vector<Match> matches;
    return SplitPieces(pieces, [&](const std::string& text, std::vector<Span>* spans) {
      matches.clear();
      UNMASK_RETURN_IF_ERROR(pattern_.FindAll(text, &matches));
      *spans = ApplySplitBehavior(MatchesToSpans(matches, text.size()), behavior_, invert_);
      return OkStatus();
    });
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// Splits on a per-character predicate (Digits, WhitespaceSplit, Punctuation).
class CharSplitPreTokenizer final : public PreTokenizer {
 public:
  CharSplitPreTokenizer(bool (*pred)(char32_t), SplitBehavior behavior) : pred_(pred), behavior_(behavior) {}

  Status PreTokenize(std::vector<Piece>* pieces) const override {
    return SplitPieces(pieces, [&](const std::string& text, std::vector<Span>* spans) {
      *spans = ApplySplitBehavior(CharSpans(text, pred_), behavior_, false);
      return OkStatus();
    });
  }

 private:
  bool (*pred_)(char32_t);
  SplitBehavior behavior_;
};

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}

  Status PreTokenize(std::vector<Piece>* pieces) const override {
    for (Piece& p : *pieces) {
      std::string replaced;
      UNMASK_RETURN_IF_ERROR(Pattern::Literal(" ").ReplaceAll(p.text, replacement_, &replaced));
      const bool starts = replaced.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts && (scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && p.at_start))) {
        replaced.insert(0, replacement_);
      }
      p.text = std::move(replaced);
    }
    if (!split_) return OkStatus();
    const Pattern marker = Pattern::Literal(replacement_);
    std::vector<Match> matches;
    return SplitPieces(pieces, [&](const std::string& text, std::vector<Span>* spans) {
      matches.clear();
      UNMASK_RETURN_IF_ERROR(marker.FindAll(text, &matches));
      *spans = ApplySplitBehavior(MatchesToSpans(matches, text.size()), SplitBehavior::kMergedWithNext, false);
      return OkStatus();
    });
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  Status PreTokenize(std::vector<Piece>* pieces) const override {
    for (const auto& part : parts_) UNMASK_RETURN_IF_ERROR(part->PreTokenize(pieces));
    return OkStatus();
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

StatusOr<std::unique_ptr<PreTokenizer>> NewByteLevelPreTokenizer(bool add_prefix_space, bool use_regex) {
  std::shared_ptr<const Regex> regex;
  if (use_regex) {
    // Compiled once per process: every byte-level tokenizer shares the same pattern.
    static const StatusOr<std::shared_ptr<const Regex>> gpt2 = Regex::Compile(kGpt2SplitPattern);
    if (!gpt2.ok()) return gpt2.status();
    regex = *gpt2;
  }
  return std::unique_ptr<PreTokenizer>(new ByteLevelPreTokenizer(add_prefix_space, std::move(regex)));
}

std::unique_ptr<PreTokenizer> NewSplitPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert) {
  return std::make_unique<SplitPreTokenizer>(std::move(pattern), behavior, invert);
}

std::unique_ptr<PreTokenizer> NewDigitsPreTokenizer(bool individual_digits) {
  return std::make_unique<CharSplitPreTokenizer>(
      IsNumeric, individual_digits ? SplitBehavior::kIsolated : SplitBehavior::kContiguous);
}

StatusOr<std::unique_ptr<PreTokenizer>> NewWhitespacePreTokenizer() {
  UNMASK_ASSIGN_OR_RETURN(std::shared_ptr<const Regex> regex, Regex::Compile(R"(\w+|[^\w\s]+)"));
  return std::unique_ptr<PreTokenizer>(
      new SplitPreTokenizer(Pattern::FromRegex(std::move(regex)), SplitBehavior::kRemoved, /*invert=*/true));
}

std::unique_ptr<PreTokenizer> NewWhitespaceSplitPreTokenizer() {
  return std::make_unique<CharSplitPreTokenizer>(IsWhitespace, SplitBehavior::kRemoved);
}

std::unique_ptr<PreTokenizer> NewPunctuationPreTokenizer(SplitBehavior behavior) {
  return std::make_unique<CharSplitPreTokenizer>(IsPunctuation, behavior);
}

std::unique_ptr<PreTokenizer> NewMetaspacePreTokenizer(std::string replacement, PrependScheme scheme,
                                                       bool split) {
  return std::make_unique<MetaspacePreTokenizer>(std::move(replacement), scheme, split);
}

std::unique_ptr<PreTokenizer> NewSequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) {
  return std::make_unique<SequencePreTokenizer>(std::move(parts));
}

}  // namespace unmask::tokenizer
