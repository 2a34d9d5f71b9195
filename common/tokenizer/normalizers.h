// Normalizers: the text transforms tokenizer.json applies before pre-tokenization.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/tokenizer/regex.h"
#include "common/tokenizer/unicode.h"
#include "common/util/status.h"

namespace unmask::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Transforms valid UTF-8 `text` in place; the result is valid UTF-8 too. Offsets are not
  // tracked: this library returns ids, not alignments.
  virtual Status Normalize(std::string* text) const = 0;
};

// NFC / NFD / NFKC / NFKD through ICU.
std::unique_ptr<Normalizer> NewUnicodeNormalizer(UnicodeForm form);
// Full Unicode lowercasing (locale independent).
std::unique_ptr<Normalizer> NewLowercaseNormalizer();
// Applies each normalizer in order.
std::unique_ptr<Normalizer> NewSequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> normalizers);
// Replaces every match of `pattern` by `content`.
std::unique_ptr<Normalizer> NewReplaceNormalizer(Pattern pattern, std::string content);
// Prepends `prefix` to non-empty text.
std::unique_ptr<Normalizer> NewPrependNormalizer(std::string prefix);
// Removes leading and/or trailing Unicode whitespace.
std::unique_ptr<Normalizer> NewStripNormalizer(bool left, bool right);
// Removes nonspacing marks (Mn); meant to follow NFD/NFKD, as in tokenizer.json files.
std::unique_ptr<Normalizer> NewStripAccentsNormalizer();
// Maps every byte to its byte-level character (see byte_level.h).
std::unique_ptr<Normalizer> NewByteLevelNormalizer();

}  // namespace unmask::tokenizer
