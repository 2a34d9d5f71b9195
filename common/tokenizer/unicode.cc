#include "common/tokenizer/unicode.h"

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>

#include "common/tokenizer/utf8.h"

namespace unmask::tokenizer {

bool IsWhitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE);
}

bool IsWordChar(char32_t c) {
  if (c < 0x80) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }
  const auto ch = static_cast<UChar32>(c);
  if (u_hasBinaryProperty(ch, UCHAR_ALPHABETIC) || u_hasBinaryProperty(ch, UCHAR_JOIN_CONTROL)) {
    return true;
  }
  const uint32_t mask = U_GET_GC_MASK(ch);
  return (mask & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

bool IsNumeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_N_MASK) != 0;
}

bool IsPunctuation(char32_t c) {
  if (c < 0x80) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  }
  return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_P_MASK) != 0;
}

bool IsNonspacingMark(char32_t c) {
  return c >= 0x80 && u_charType(static_cast<UChar32>(c)) == U_NON_SPACING_MARK;
}

Status NormalizeUnicode(UnicodeForm form, std::string* text) {
  if (IsAscii(*text)) return OkStatus();
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer = nullptr;
  switch (form) {
    case UnicodeForm::kNFC: normalizer = icu::Normalizer2::getNFCInstance(err); break;
    case UnicodeForm::kNFD: normalizer = icu::Normalizer2::getNFDInstance(err); break;
    case UnicodeForm::kNFKC: normalizer = icu::Normalizer2::getNFKCInstance(err); break;
    case UnicodeForm::kNFKD: normalizer = icu::Normalizer2::getNFKDInstance(err); break;
  }
  if (U_FAILURE(err) || normalizer == nullptr) {
    return InternalError(std::string("ICU normalizer unavailable: ") + u_errorName(err));
  }
  const icu::UnicodeString src = icu::UnicodeString::fromUTF8(*text);
  const icu::UnicodeString dst = normalizer->normalize(src, err);
  if (U_FAILURE(err)) return InternalError(std::string("ICU normalize failed: ") + u_errorName(err));
  text->clear();
  dst.toUTF8String(*text);
  return OkStatus();
}

Status LowercaseUnicode(std::string* text) {
  if (IsAscii(*text)) {
    for (char& c : *text) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return OkStatus();
  }
  icu::UnicodeString s = icu::UnicodeString::fromUTF8(*text);
  s.toLower(icu::Locale::getRoot());
  if (s.isBogus()) return InternalError("ICU lowercase failed");
  text->clear();
  s.toUTF8String(*text);
  return OkStatus();
}

}  // namespace unmask::tokenizer
