#include "common/tokenizer/utf8.h"

namespace unmask::tokenizer {
namespace {

// Length of the valid UTF-8 sequence at s[pos], or 0 when none starts there. When 0, *maximal is
// set to the length of the maximal subpart (>= 1): the bytes that could still have begun a valid
// sequence, which is how far the lossy conversion skips for one U+FFFD.
size_t ValidSequenceAt(std::string_view s, size_t pos, size_t* maximal) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  const unsigned char c = p[pos];
  if (c < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    *maximal = 1;
    return 0;
  }
  size_t i = 1;
  for (; i < need; ++i) {
    if (pos + i >= n) break;
    const unsigned char b = p[pos + i];
    const unsigned char min = (i == 1) ? lo : 0x80;
    const unsigned char max = (i == 1) ? hi : 0xBF;
    if (b < min || b > max) break;
  }
  if (i == need) return need;
  *maximal = i;
  return 0;
}

}  // namespace

size_t FindInvalidUtf8(std::string_view s) {
  size_t pos = 0;
  const size_t n = s.size();
  while (pos < n) {
    // Fast path over ASCII runs, which dominate real text.
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    size_t maximal = 0;
    const size_t len = ValidSequenceAt(s, pos, &maximal);
    if (len == 0) return pos;  // the start of the ill-formed sequence
    pos += len;
  }
  return kNoInvalidUtf8;
}

char32_t PrevCodePoint(std::string_view s, size_t* pos) {
  size_t start = *pos - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  size_t p = start;
  const char32_t cp = NextCodePoint(s, &p);
  *pos = start;
  return cp;
}

namespace {

// Copies the valid sequences of `bytes` and calls invalid(out, subpart) for each maximal invalid subpart.
template <typename OnInvalid>
std::string MapInvalidUtf8(std::string_view bytes, OnInvalid invalid) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t maximal = 0;
    const size_t len = ValidSequenceAt(bytes, pos, &maximal);
    if (len > 0) {
      out.append(bytes.data() + pos, len);
      pos += len;
    } else {
      invalid(out, bytes.substr(pos, maximal));
      pos += maximal;
    }
  }
  return out;
}

}  // namespace

std::string LossyUtf8(std::string_view bytes) {
  return MapInvalidUtf8(bytes, [](std::string& out, std::string_view) { out.append("\xEF\xBF\xBD"); });  // U+FFFD
}

std::string CarryInvalidBytes(std::string_view bytes) {
  return MapInvalidUtf8(bytes, [](std::string& out, std::string_view subpart) {
    for (unsigned char b : subpart) AppendUtf8(kCarriedByteBase + b, &out);
  });
}

std::string RestoreCarriedBytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t begin = pos;
    const char32_t c = NextCodePoint(text, &pos);
    if (c >= kCarriedByteBase && c <= kCarriedByteBase + 0xFF) {
      out.push_back(static_cast<char>(c - kCarriedByteBase));
    } else {
      out.append(text, begin, pos - begin);
    }
  }
  return out;
}

}  // namespace unmask::tokenizer
