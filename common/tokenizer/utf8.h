// UTF-8 helpers for the tokenizer. Everything here works on bytes; no ICU.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/util/strings.h"  // AppendUtf8

namespace unmask::tokenizer {

inline constexpr size_t kNoInvalidUtf8 = std::string_view::npos;

// Returns the byte offset where the first ill-formed UTF-8 sequence starts
// (RFC 3629: no overlong forms, no UTF-16 surrogates, nothing above U+10FFFF, no truncated
// sequence), or kNoInvalidUtf8 when `s` is entirely valid.
size_t FindInvalidUtf8(std::string_view s);

// Length in bytes of the UTF-8 sequence that starts with `lead`. Continuation and invalid lead
// bytes count as 1 so that loops over (already validated) text always advance.
inline size_t Utf8Length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

// Decodes the code point at s[*pos] and advances *pos past it. Contract: `s` is valid UTF-8 and
// *pos < s.size() is at the start of a sequence (the tokenizer validates input up front).
inline char32_t NextCodePoint(std::string_view s, size_t* pos) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + *pos;
  const unsigned char c = p[0];
  if (c < 0x80) {
    *pos += 1;
    return c;
  }
  if ((c & 0xE0) == 0xC0) {
    *pos += 2;
    return (char32_t(c & 0x1F) << 6) | (p[1] & 0x3F);
  }
  if ((c & 0xF0) == 0xE0) {
    *pos += 3;
    return (char32_t(c & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
  }
  *pos += 4;
  return (char32_t(c & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) | (char32_t(p[2] & 0x3F) << 6) |
         (p[3] & 0x3F);
}

// Decodes the code point that ends right before s[*pos] and moves *pos back to its start.
// Same contract as NextCodePoint, with *pos > 0.
char32_t PrevCodePoint(std::string_view s, size_t* pos);

// Converts arbitrary bytes to valid UTF-8, replacing each maximal invalid subsequence by U+FFFD
// (Unicode's "substitution of maximal subparts", the rule Rust's String::from_utf8_lossy follows,
// so decode output matches Hugging Face tokenizers byte for byte).
std::string LossyUtf8(std::string_view bytes);

// Raw bytes through code that needs valid UTF-8 (the decoders after ByteLevel / ByteFallback):
// CarryInvalidBytes keeps valid sequences and turns every byte of an invalid one into the code
// point U+10FE00 + byte (Supplementary Private Use Area-B, which no tokenizer's vocabulary
// uses); RestoreCarriedBytes turns those code points back into the bytes. Restoring what was
// carried gives the bytes back exactly.
inline constexpr char32_t kCarriedByteBase = 0x10FE00;
std::string CarryInvalidBytes(std::string_view bytes);
std::string RestoreCarriedBytes(std::string_view text);

inline bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

}  // namespace unmask::tokenizer
