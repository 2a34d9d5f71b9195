// Pre-tokenizers: split normalized text into the "words" that the model tokenizes one by one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/tokenizer/regex.h"
#include "common/tokenizer/split.h"
#include "common/util/status.h"

namespace unmask::tokenizer {

struct Piece {
  std::string text;
  // Whether the piece begins at offset 0 of the encoded input. Only Metaspace's
  // prepend_scheme "first" looks at it.
  bool at_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits (and possibly rewrites) every piece, keeping order; empty pieces are dropped.
  virtual Status PreTokenize(std::vector<Piece>* pieces) const = 0;
};

// The GPT-2 split pattern that ByteLevel(use_regex=true) applies. Its `\s+(?!\S)` alternative
// is the reason regexes go through PCRE2 (see regex.h).
inline constexpr char kGpt2SplitPattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// ByteLevel: optionally prepends a space to pieces not starting with one, optionally splits with
// kGpt2SplitPattern (Isolated), then maps every byte to its byte-level character.
StatusOr<std::unique_ptr<PreTokenizer>> NewByteLevelPreTokenizer(bool add_prefix_space, bool use_regex);
// Split: cuts on the matches of `pattern` according to `behavior` (after `invert`).
std::unique_ptr<PreTokenizer> NewSplitPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert);
// Digits: isolates every numeric character, or groups runs of them (individual_digits=false).
std::unique_ptr<PreTokenizer> NewDigitsPreTokenizer(bool individual_digits);
// Whitespace: keeps the matches of `\w+|[^\w\s]+`, drops the rest.
StatusOr<std::unique_ptr<PreTokenizer>> NewWhitespacePreTokenizer();
// WhitespaceSplit: splits on Unicode whitespace, which is dropped.
std::unique_ptr<PreTokenizer> NewWhitespaceSplitPreTokenizer();
// Punctuation: splits on punctuation characters with `behavior` (Isolated by default in JSON).
std::unique_ptr<PreTokenizer> NewPunctuationPreTokenizer(SplitBehavior behavior);

enum class PrependScheme { kAlways, kFirst, kNever };
// Metaspace: replaces ' ' with `replacement` (usually U+2581), prepends it per `scheme`, then
// (split=true) cuts before every replacement character (MergedWithNext).
std::unique_ptr<PreTokenizer> NewMetaspacePreTokenizer(std::string replacement, PrependScheme scheme,
                                                       bool split);
// Applies each pre-tokenizer in order.
std::unique_ptr<PreTokenizer> NewSequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts);

}  // namespace unmask::tokenizer
