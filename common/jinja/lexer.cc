#include "common/jinja/lexer.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "common/jinja/error.h"
#include "common/jinja/py_string.h"

namespace unmask::jinja {

namespace {

bool IsDigitChar(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigitChar(c); }

class Lexer {
 public:
  explicit Lexer(const std::string& source) : s_(source) {}

  std::vector<Token> Run() {
    std::size_t pos = 0;
    while (pos < s_.size()) pos = LexText(pos);
    Push(Tok::kEof, s_.size());
    return std::move(out_);
  }

 private:
  bool At(std::size_t p, const char* lit) const { return s_.compare(p, std::char_traits<char>::length(lit), lit) == 0; }

  std::size_t SkipSpace(std::size_t p) const {  // Python's \s*
    std::size_t len = 0;
    while (p < s_.size() && py::IsSpace(py::DecodeAt(s_, p, &len))) p += len;
    return p;
  }

  Token& Push(Tok type, std::size_t pos, std::string value = {}) {
    out_.push_back(Token{type, static_cast<std::uint32_t>(pos), std::move(value)});
    return out_.back();
  }

  [[noreturn]] void Error(std::size_t pos, std::string message) const {
    FailAt(static_cast<std::uint32_t>(pos), std::move(message), kReasonSyntax);
  }

  // The text before a tag, as Jinja's OptionalLStrip leaves it: '-' strips all whitespace before
  // the tag; otherwise, for {% and {# (lstrip_blocks), spaces and tabs from the line start.
  void EmitText(std::size_t begin, std::size_t end, char sign, bool variable) {
    std::string text = s_.substr(begin, end - begin);
    const bool line_starting = begin == 0 || s_[begin - 1] == '\n';
    if (sign == '-') {
      text = py::Strip(text, nullptr, false, true);
    } else if (sign != '+' && !variable) {
      const std::size_t l_pos = text.rfind('\n') + 1;  // npos + 1 == 0
      if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
          py::Strip(text.substr(l_pos), nullptr, true, false).empty()) {
        text.resize(l_pos);
      }
    }
    if (!text.empty()) Push(Tok::kData, begin, std::move(text));
  }

  // Text up to the next tag, and the tag. Returns the position after it.
  std::size_t LexText(std::size_t pos) {
    std::size_t tag = pos;
    while ((tag = s_.find('{', tag)) != std::string::npos) {
      if (tag + 1 < s_.size() && (s_[tag + 1] == '{' || s_[tag + 1] == '%' || s_[tag + 1] == '#')) break;
      ++tag;
    }
    if (tag == std::string::npos) {
      Push(Tok::kData, pos, s_.substr(pos));
      return s_.size();
    }
    const char kind = s_[tag + 1];
    std::size_t after = tag + 2;
    const char sign = after < s_.size() && (s_[after] == '-' || s_[after] == '+') ? s_[after] : 0;
    if (kind == '%') {
      if (const std::size_t raw_end = MatchRawBegin(tag); raw_end != std::string::npos) {
        EmitText(pos, tag, sign, false);
        return LexRaw(raw_end);
      }
    }
    EmitText(pos, tag, sign, kind == '{');
    if (sign != 0) ++after;
    if (kind == '#') return LexComment(tag, after);
    Push(kind == '%' ? Tok::kBlockBegin : Tok::kVarBegin, tag);
    return LexTag(after, kind == '%');
  }

  // {%(-|+|)\s*raw\s*(?:-%}\s*|%}) at `tag`: the position after it, or npos.
  std::size_t MatchRawBegin(std::size_t tag) const {
    std::size_t p = tag + 2;
    if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) ++p;
    p = SkipSpace(p);
    if (!At(p, "raw")) return std::string::npos;
    p = SkipSpace(p + 3);
    if (At(p, "-%}")) return SkipSpace(p + 3);
    if (At(p, "%}")) return p + 2;
    return std::string::npos;
  }

  // The body of {% raw %} up to {% endraw %}.
  std::size_t LexRaw(std::size_t body) {
    for (std::size_t p = s_.find("{%", body); p != std::string::npos; p = s_.find("{%", p + 1)) {
      std::size_t q = p + 2;
      const char sign = q < s_.size() && (s_[q] == '-' || s_[q] == '+') ? s_[q] : 0;
      if (sign != 0) ++q;
      q = SkipSpace(q);
      if (!At(q, "endraw")) continue;
      q = SkipSpace(q + 6);
      std::size_t end;
      if (At(q, "+%}")) end = q + 3;
      else if (At(q, "-%}")) end = SkipSpace(q + 3);
      else if (At(q, "%}")) end = q + 2 + (q + 2 < s_.size() && s_[q + 2] == '\n' ? 1 : 0);
      else continue;
      EmitText(body, p, sign, false);
      return end;
    }
    Error(body, "missing end of raw directive ({% endraw %})");
  }

  std::size_t LexComment(std::size_t tag, std::size_t p) {
    for (std::size_t q = s_.find("#}", p); q != std::string::npos; q = s_.find("#}", q + 1)) {
      if (q > p && s_[q - 1] == '+') return q + 2;
      if (q > p && s_[q - 1] == '-') return SkipSpace(q + 2);
      return q + 2 + (q + 2 < s_.size() && s_[q + 2] == '\n' ? 1 : 0);
    }
    Error(tag, "missing end of comment tag ('#}')");
  }

  // A tag's tokens up to its end. Returns the position after the end (and any whitespace the
  // end removes).
  std::size_t LexTag(std::size_t p, bool block) {
    std::vector<char> balance;
    while (true) {
      if (balance.empty()) {
        if (block) {
          if (At(p, "+%}")) return Push(Tok::kBlockEnd, p), p + 3;
          if (At(p, "-%}")) return Push(Tok::kBlockEnd, p), SkipSpace(p + 3);
          if (At(p, "%}")) return Push(Tok::kBlockEnd, p), p + 2 + (p + 2 < s_.size() && s_[p + 2] == '\n' ? 1 : 0);
        } else {
          if (At(p, "-}}")) return Push(Tok::kVarEnd, p), SkipSpace(p + 3);
          if (At(p, "}}")) return Push(Tok::kVarEnd, p), p + 2;
        }
      }
      if (p >= s_.size()) return p;  // the parser reports the unclosed tag
      const std::size_t q = SkipSpace(p);
      if (q > p) {
        p = q;
        continue;
      }
      p = LexToken(p, &balance);
    }
  }

  std::size_t LexToken(std::size_t p, std::vector<char>* balance) {
    if (std::size_t end = MatchFloat(p); end != std::string::npos) return EmitFloat(p, end);
    if (std::size_t end = MatchInteger(p); end != std::string::npos) return EmitInteger(p, end);
    const char c = s_[p];
    if (IsNameStart(c)) {
      std::size_t end = p + 1;
      while (end < s_.size() && IsNameChar(s_[end])) ++end;
      Push(Tok::kName, p, s_.substr(p, end - p));
      return end;
    }
    if (c == '\'' || c == '"') {
      for (std::size_t q = p + 1; q < s_.size(); ++q) {
        if (s_[q] == '\\') ++q;
        else if (s_[q] == c) return Push(Tok::kString, p, DecodeString(p + 1, q)), q + 1;
      }
      Error(p, std::string("unexpected char '") + c + "' (a string that is never closed)");
    }
    return LexOperator(p, balance);
  }

  std::size_t LexOperator(std::size_t p, std::vector<char>* balance) {
    static const char* const kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kTwo) {
      if (At(p, op)) return Push(Tok::kOp, p, op), p + 2;
    }
    const char c = s_[p];
    if (std::string("+-/*%~[](){}><=.:|,;").find(c) == std::string::npos) {
      std::size_t len = 0;
      py::DecodeAt(s_, p, &len);
      Error(p, "unexpected char '" + s_.substr(p, len) + "'");
    }
    if (c == '(' || c == '[' || c == '{') balance->push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    if (c == ')' || c == ']' || c == '}') {
      if (balance->empty()) Error(p, std::string("unexpected '") + c + "'");
      const char expected = balance->back();
      balance->pop_back();
      if (expected != c) Error(p, std::string("unexpected '") + c + "', expected '" + expected + "'");
    }
    Push(Tok::kOp, p, std::string(1, c));
    return p + 1;
  }

  // (\d+_)*\d+ at p: its end, or npos.
  std::size_t MatchDigits(std::size_t p) const {
    if (p >= s_.size() || !IsDigitChar(s_[p])) return std::string::npos;
    while (p < s_.size() && IsDigitChar(s_[p])) ++p;
    while (p + 1 < s_.size() && s_[p] == '_' && IsDigitChar(s_[p + 1])) {
      p += 1;
      while (p < s_.size() && IsDigitChar(s_[p])) ++p;
    }
    return p;
  }

  std::size_t MatchExponent(std::size_t p) const {
    if (p >= s_.size() || (s_[p] != 'e' && s_[p] != 'E')) return std::string::npos;
    ++p;
    if (p < s_.size() && (s_[p] == '+' || s_[p] == '-')) ++p;
    return MatchDigits(p);
  }

  std::size_t MatchFloat(std::size_t p) const {
    if (p > 0 && s_[p - 1] == '.') return std::string::npos;
    const std::size_t int_end = MatchDigits(p);
    if (int_end == std::string::npos) return std::string::npos;
    const std::size_t frac_end = s_[int_end] == '.' ? MatchDigits(int_end + 1) : std::string::npos;
    if (frac_end != std::string::npos) {
      if (const std::size_t e = MatchExponent(frac_end); e != std::string::npos) return e;
    }
    if (const std::size_t e = MatchExponent(int_end); e != std::string::npos) return e;
    return frac_end;
  }

  std::size_t MatchInteger(std::size_t p) const {
    const char c = s_[p];
    if (!IsDigitChar(c)) return std::string::npos;
    if (c == '0' && p + 1 < s_.size()) {
      const char base = static_cast<char>(s_[p + 1] | 0x20);
      const char* digits = base == 'b' ? "01" : base == 'o' ? "01234567" : base == 'x' ? "0123456789abcdefABCDEF" : nullptr;
      if (digits != nullptr) {
        std::size_t q = p + 2, end = std::string::npos;
        while (true) {
          const std::size_t d = q < s_.size() && s_[q] == '_' ? q + 1 : q;
          if (d >= s_.size() || std::string(digits).find(s_[d]) == std::string::npos) break;
          end = q = d + 1;
        }
        if (end != std::string::npos) return end;
      }
    }
    std::size_t q = p + 1;
    while (true) {
      const std::size_t d = q < s_.size() && s_[q] == '_' ? q + 1 : q;
      if (d >= s_.size() || !IsDigitChar(s_[d]) || (c == '0' && s_[d] != '0')) break;
      q = d + 1;
    }
    return q;
  }

  std::size_t EmitFloat(std::size_t p, std::size_t end) {
    std::string text;
    for (std::size_t i = p; i < end; ++i) {
      if (s_[i] != '_') text += s_[i];
    }
    Push(Tok::kFloat, p).float_value = std::strtod(text.c_str(), nullptr);
    return end;
  }

  std::size_t EmitInteger(std::size_t p, std::size_t end) {
    std::string text;
    for (std::size_t i = p; i < end; ++i) {
      if (s_[i] != '_') text += s_[i];
    }
    int base = 10;
    if (text.size() > 1 && text[0] == '0' && (text[1] | 0x20) != '0') {
      base = (text[1] | 0x20) == 'b' ? 2 : (text[1] | 0x20) == 'o' ? 8 : 16;
      text.erase(0, 2);
    }
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), nullptr, base);
    if (errno == ERANGE || v > static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max())) {
      Error(p, "integer literal too large (this interpreter's integers are 64-bit)");
    }
    Push(Tok::kInt, p).int_value = static_cast<std::int64_t>(v);
    return end;
  }

  std::string DecodeString(std::size_t begin, std::size_t end) const;

  const std::string& s_;
  std::vector<Token> out_;
};

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(c | 0x20);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// Python's "unicode-escape" decoding of a string literal's body (after Jinja's backslashreplace).
std::string Lexer::DecodeString(std::size_t begin, std::size_t end) const {
  std::string out;
  for (std::size_t i = begin; i < end;) {
    if (s_[i] != '\\') {
      out += s_[i++];
      continue;
    }
    const char c = s_[i + 1];
    i += 2;
    static const std::string kSimple = "\\'\"abfnrtv";
    static const char kSimpleValues[] = "\\'\"\a\b\f\n\r\t\v";
    if (const std::size_t k = kSimple.find(c); k != std::string::npos) {
      out += kSimpleValues[k];
    } else if (c == '\n') {
      // a backslash before a newline continues the line
    } else if (c >= '0' && c <= '7') {
      char32_t v = static_cast<char32_t>(c - '0');
      for (int n = 0; n < 2 && i < end && s_[i] >= '0' && s_[i] <= '7'; ++n) v = v * 8 + static_cast<char32_t>(s_[i++] - '0');
      AppendUtf8(v, &out);
    } else if (c == 'x' || c == 'u' || c == 'U') {
      const int digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
      char32_t v = 0;
      for (int n = 0; n < digits; ++n, ++i) {
        if (i >= end || HexValue(s_[i]) < 0) Error(begin, std::string("truncated \\") + c + " escape in a string");
        v = v * 16 + static_cast<char32_t>(HexValue(s_[i]));
      }
      if (v > 0x10FFFF) Error(begin, "illegal Unicode character in a string");
      if (v >= 0xD800 && v <= 0xDFFF) Error(begin, "a string escape names a lone surrogate (unsupported)");
      AppendUtf8(v, &out);
    } else if (c == 'N') {
      FailAt(static_cast<std::uint32_t>(begin), "\\N{...} escapes in strings are not supported", kReasonUnsupported);
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      // Jinja turned the character into "\xe9" (say) before decoding, so the backslash escapes
      // that backslash: the result is the text "\xe9".
      std::size_t len = 0;
      const char32_t cp = py::DecodeAt(s_, i - 1, &len);
      char buf[16];
      std::snprintf(buf, sizeof buf, cp <= 0xFF ? "\\x%02x" : cp <= 0xFFFF ? "\\u%04x" : "\\U%08x", static_cast<unsigned>(cp));
      out += buf;
      i += len - 1;
    } else {
      out += '\\';
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string NormalizeSource(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      out += '\n';
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      out += text[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::vector<Token> Lex(const std::string& source) {
  if (source.size() >= kNoPos) Fail("the template is larger than 4 GiB", kReasonLimit, StatusCode::kResourceExhausted);
  return Lexer(source).Run();
}

std::string DescribeToken(const Token& token) {
  switch (token.type) {
    case Tok::kData: return "template data / text";
    case Tok::kVarBegin: return "begin of print statement";
    case Tok::kVarEnd: return "end of print statement";
    case Tok::kBlockBegin: return "begin of statement block";
    case Tok::kBlockEnd: return "end of statement block";
    case Tok::kName: return "'" + token.value + "'";
    case Tok::kString: return "string";
    case Tok::kInt: return "integer";
    case Tok::kFloat: return "float";
    case Tok::kOp: return "'" + token.value + "'";
    case Tok::kEof: return "end of template";
  }
  return "token";
}

}  // namespace unmask::jinja
