#include "common/jinja/py_string.h"

#include <algorithm>

#include "common/jinja/error.h"

namespace unmask::jinja::py {

char32_t DecodeAt(const std::string& s, std::size_t i, std::size_t* length) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  *length = 1;
  if (c < 0x80) return c;
  int n = 0;
  char32_t cp = 0;
  if ((c & 0xE0) == 0xC0) n = 1, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 2, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 3, cp = c & 0x07;
  else return c;
  if (i + n >= s.size()) return c;
  for (int k = 1; k <= n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return c;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr char32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return c;
  *length = n + 1;
  return cp;
}

namespace {

// Appends cp as it was in the source: a lone invalid byte (< 0x100 from DecodeAt of length 1
// with the high bit set) is put back as that byte.
void AppendChar(std::string* out, const std::string& s, std::size_t i, std::size_t len, char32_t cp) {
  if (len == 1 && cp >= 0x80) out->push_back(s[i]);
  else AppendUtf8(cp, out);
}

template <typename F>
std::string MapChars(const std::string& s, F f) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0, len = 0; i < s.size(); i += len) {
    const char32_t cp = DecodeAt(s, i, &len);
    f(&out, s, i, len, cp);
  }
  return out;
}

// Python's full case mappings that are not one character.
bool SpecialUpper(std::string* out, char32_t cp) {
  if (cp == 0xDF) return out->append("SS"), true;
  if (cp == 0x149) return out->append("\xCA\xBCN"), true;
  return false;
}

bool SpecialLower(std::string* out, char32_t cp) {
  if (cp == 0x130) return out->append("i\xCC\x87"), true;
  return false;
}

}  // namespace

std::vector<std::size_t> CharOffsets(const std::string& s) {
  std::vector<std::size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (std::size_t i = 0, len = 0; i < s.size(); i += len) {
    offsets.push_back(i);
    DecodeAt(s, i, &len);
  }
  offsets.push_back(s.size());
  return offsets;
}

std::size_t CharCount(const std::string& s) {
  std::size_t n = 0;
  for (std::size_t i = 0, len = 0; i < s.size(); i += len, ++n) DecodeAt(s, i, &len);
  return n;
}

std::vector<std::string> Chars(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0, len = 0; i < s.size(); i += len) {
    DecodeAt(s, i, &len);
    out.push_back(s.substr(i, len));
  }
  return out;
}

bool IsSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

char32_t SimpleUpper(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if (c == 0xB5) return 0x39C;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x137) return c & ~1u;
  if (c >= 0x139 && c <= 0x148) return (c % 2 == 0) ? c - 1 : c;
  if (c >= 0x14A && c <= 0x177) return c & ~1u;
  if (c >= 0x179 && c <= 0x17E) return (c % 2 == 0) ? c - 1 : c;
  if (c == 0x131) return 'I';
  if (c == 0x17F) return 'S';
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c >= 0x3AC && c <= 0x3AF) return c == 0x3AC ? 0x386 : c - 37;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
  return c;
}

char32_t SimpleLower(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if (c >= 0x100 && c <= 0x137 && c != 0x130) return c | 1u;
  if (c >= 0x139 && c <= 0x148) return (c % 2 == 1) ? c + 1 : c;
  if (c >= 0x14A && c <= 0x177) return c | 1u;
  if (c >= 0x179 && c <= 0x17E) return (c % 2 == 1) ? c + 1 : c;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
  return c;
}

bool IsCased(char32_t c) {
  return SimpleUpper(c) != c || SimpleLower(c) != c || c == 0xDF || c == 0x138 || c == 0x149 || c == 0x130;
}

bool IsAlpha(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (c == 0xAA || c == 0xBA) return true;
  if (IsCased(c)) return true;
  // CJK, kana, hangul, Arabic, Hebrew, Devanagari letters (approximate ranges).
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3040 && c <= 0x30FF && c != 0x30FB) || (c >= 0xAC00 && c <= 0xD7A3) ||
         (c >= 0x5D0 && c <= 0x5EA) || (c >= 0x620 && c <= 0x64A) || (c >= 0x905 && c <= 0x939);
}

bool IsDigit(char32_t c) { return (c >= '0' && c <= '9') || (c >= 0xFF10 && c <= 0xFF19) || (c >= 0x660 && c <= 0x669); }

std::string Upper(const std::string& s) {
  return MapChars(s, [](std::string* out, const std::string& src, std::size_t i, std::size_t len, char32_t cp) {
    if (!SpecialUpper(out, cp)) AppendChar(out, src, i, len, len == 1 && cp >= 0x80 ? cp : SimpleUpper(cp));
  });
}

std::string Lower(const std::string& s) {
  return MapChars(s, [](std::string* out, const std::string& src, std::size_t i, std::size_t len, char32_t cp) {
    if (!SpecialLower(out, cp)) AppendChar(out, src, i, len, len == 1 && cp >= 0x80 ? cp : SimpleLower(cp));
  });
}

std::string Capitalize(const std::string& s) {
  bool first = true;
  return MapChars(s, [&](std::string* out, const std::string& src, std::size_t i, std::size_t len, char32_t cp) {
    const bool invalid = len == 1 && cp >= 0x80;
    if (first) {
      if (!SpecialUpper(out, cp)) AppendChar(out, src, i, len, invalid ? cp : SimpleUpper(cp));
    } else if (!SpecialLower(out, cp)) {
      AppendChar(out, src, i, len, invalid ? cp : SimpleLower(cp));
    }
    first = false;
  });
}

std::string Title(const std::string& s) {
  bool previous_cased = false;
  return MapChars(s, [&](std::string* out, const std::string& src, std::size_t i, std::size_t len, char32_t cp) {
    const bool invalid = len == 1 && cp >= 0x80;
    const bool cased = !invalid && IsCased(cp);
    if (!cased) AppendChar(out, src, i, len, cp);
    else if (previous_cased) {
      if (!SpecialLower(out, cp)) AppendUtf8(SimpleLower(cp), out);
    } else if (cp == 0xDF) {
      out->append("Ss");
    } else {
      AppendUtf8(SimpleUpper(cp), out);
    }
    previous_cased = cased;
  });
}

std::string Strip(const std::string& s, const std::string* chars, bool left, bool right) {
  std::vector<char32_t> set;
  if (chars != nullptr) {
    for (std::size_t i = 0, len = 0; i < chars->size(); i += len) set.push_back(DecodeAt(*chars, i, &len));
  }
  const auto strippable = [&](char32_t cp) {
    return chars == nullptr ? IsSpace(cp) : std::find(set.begin(), set.end(), cp) != set.end();
  };
  const std::vector<std::size_t> offsets = CharOffsets(s);
  std::size_t begin = 0, end = offsets.size() - 1;  // character indices
  std::size_t len = 0;
  while (left && begin < end && strippable(DecodeAt(s, offsets[begin], &len))) ++begin;
  while (right && end > begin && strippable(DecodeAt(s, offsets[end - 1], &len))) --end;
  return s.substr(offsets[begin], offsets[end] - offsets[begin]);
}

namespace {

// Whitespace-separated words with their byte ranges.
std::vector<std::pair<std::size_t, std::size_t>> Words(const std::string& s) {
  std::vector<std::pair<std::size_t, std::size_t>> words;
  std::size_t start = std::string::npos;
  for (std::size_t i = 0, len = 0; i < s.size(); i += len) {
    const bool space = IsSpace(DecodeAt(s, i, &len));
    if (space && start != std::string::npos) words.emplace_back(start, i), start = std::string::npos;
    if (!space && start == std::string::npos) start = i;
  }
  if (start != std::string::npos) words.emplace_back(start, s.size());
  return words;
}

}  // namespace

std::vector<std::string> Split(const std::string& s, const std::string* sep, std::int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep == nullptr) {
    const auto words = Words(s);
    for (std::size_t w = 0; w < words.size(); ++w) {
      if (maxsplit >= 0 && static_cast<std::int64_t>(w) == maxsplit) {
        out.push_back(s.substr(words[w].first));
        break;
      }
      out.push_back(s.substr(words[w].first, words[w].second - words[w].first));
    }
    return out;
  }
  if (sep->empty()) Fail("ValueError: empty separator");
  std::size_t start = 0;
  for (std::int64_t n = 0; maxsplit < 0 || n < maxsplit; ++n) {
    const std::size_t at = s.find(*sep, start);
    if (at == std::string::npos) break;
    out.push_back(s.substr(start, at - start));
    start = at + sep->size();
  }
  out.push_back(s.substr(start));
  return out;
}

std::vector<std::string> RSplit(const std::string& s, const std::string* sep, std::int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep == nullptr) {
    const auto words = Words(s);
    std::int64_t n = 0;
    for (std::size_t w = words.size(); w-- > 0; ++n) {
      if (maxsplit >= 0 && n == maxsplit) {
        out.push_back(s.substr(0, words[w].second));
        break;
      }
      out.push_back(s.substr(words[w].first, words[w].second - words[w].first));
    }
    std::reverse(out.begin(), out.end());
    return out;
  }
  if (sep->empty()) Fail("ValueError: empty separator");
  std::size_t end = s.size();
  for (std::int64_t n = 0; maxsplit < 0 || n < maxsplit; ++n) {
    if (end < sep->size()) break;
    const std::size_t at = s.rfind(*sep, end - sep->size());
    if (at == std::string::npos) break;
    out.push_back(s.substr(at + sep->size(), end - at - sep->size()));
    end = at;
  }
  out.push_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> SplitLines(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0, len = 0; i < s.size(); i += len) {
    const char32_t cp = DecodeAt(s, i, &len);
    const bool newline = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D ||
                         cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!newline) continue;
    out.push_back(s.substr(start, i - start));
    if (cp == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++len;
    start = i + len;
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

std::string Replace(const std::string& s, const std::string& old, const std::string& with, std::int64_t count,
                    std::size_t max_bytes) {
  std::string out;
  const auto append = [&](const std::string& piece) {
    if (out.size() + piece.size() > max_bytes) Fail("the string is too long", kReasonLimit, StatusCode::kResourceExhausted);
    out += piece;
  };
  std::int64_t done = 0;
  if (old.empty()) {  // "abc".replace("", "-") == "-a-b-c-"
    const auto chars = Chars(s);
    for (const std::string& c : chars) {
      if (count < 0 || done < count) append(with), ++done;
      append(c);
    }
    if (count < 0 || done < count) append(with);
    return out;
  }
  std::size_t start = 0;
  while (count < 0 || done < count) {
    const std::size_t at = s.find(old, start);
    if (at == std::string::npos) break;
    append(s.substr(start, at - start));
    append(with);
    start = at + old.size();
    ++done;
  }
  append(s.substr(start));
  return out;
}

std::int64_t Find(const std::string& s, const std::string& sub, bool reverse) {
  const std::size_t at = reverse ? s.rfind(sub) : s.find(sub);
  if (at == std::string::npos) return -1;
  return static_cast<std::int64_t>(CharCount(s.substr(0, at)));
}

std::int64_t Count(const std::string& s, const std::string& sub) {
  if (sub.empty()) return static_cast<std::int64_t>(CharCount(s)) + 1;
  std::int64_t n = 0;
  for (std::size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
  return n;
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0 && s.size() >= prefix.size(); }

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::int64_t> SliceIndices(std::int64_t length, std::optional<std::int64_t> start,
                                       std::optional<std::int64_t> stop, std::optional<std::int64_t> step) {
  const std::int64_t st = step.value_or(1);
  if (st == 0) Fail("ValueError: slice step cannot be zero");
  const auto clamp = [&](std::optional<std::int64_t> v, std::int64_t if_none) {
    if (!v) return if_none;
    std::int64_t x = *v;
    if (x < 0) x += length;
    if (st > 0) return std::clamp<std::int64_t>(x, 0, length);
    return std::clamp<std::int64_t>(x, -1, length - 1);
  };
  const std::int64_t b = clamp(start, st > 0 ? 0 : length - 1);
  const std::int64_t e = clamp(stop, st > 0 ? length : -1);
  std::vector<std::int64_t> out;
  for (std::int64_t i = b; st > 0 ? i < e : i > e; i += st) out.push_back(i);
  return out;
}

}  // namespace unmask::jinja::py
