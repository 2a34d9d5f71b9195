// Unicode character properties and normalization forms, backed by ICU. The predicates mirror the
// Rust definitions Hugging Face tokenizers uses, so the same text splits the same way.
#pragma once

#include <string>
#include <string_view>

#include "common/util/status.h"

namespace unmask::tokenizer {

// Rust char::is_whitespace: the Unicode White_Space property.
bool IsWhitespace(char32_t c);
// Rust regex `\w` (Unicode): Alphabetic, Mark, Decimal_Number, Connector_Punctuation, Join_Control.
bool IsWordChar(char32_t c);
// Rust char::is_numeric: general category Nd, Nl or No.
bool IsNumeric(char32_t c);
// Rust char::is_ascii_punctuation || general category P* (what the Punctuation pre-tokenizer uses).
bool IsPunctuation(char32_t c);
// General category Mn (nonspacing mark), what StripAccents removes after NFD.
bool IsNonspacingMark(char32_t c);

enum class UnicodeForm { kNFC, kNFD, kNFKC, kNFKD };

// Normalizes valid UTF-8 `text` in place. ASCII text is returned untouched without calling ICU
// (every form is the identity on ASCII).
Status NormalizeUnicode(UnicodeForm form, std::string* text);

// Full Unicode lowercasing, locale independent (ICU root locale; same mapping as Rust's
// str::to_lowercase, including the final-sigma rule).
Status LowercaseUnicode(std::string* text);

}  // namespace unmask::tokenizer
