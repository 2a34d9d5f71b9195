#include "common/tokenizer/regex.h"

#include <algorithm>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/tokenizer/utf8.h"

namespace unmask::tokenizer {
namespace {

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof(buf)) < 0) return "PCRE2 error " + std::to_string(code);
  return reinterpret_cast<const char*>(buf);
}

// Per-thread matching scratch. pcre2_match_data must not be shared between threads, and the JIT
// needs a stack larger than the 32 KiB default for long whitespace runs against `\s+(?!\S)`.
struct MatchScratch {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;

  MatchScratch() {
    // One ovector pair is enough: only the whole match is used. PCRE2 still matches patterns with
    // capture groups and reports rc == 0 ("ovector too small"), with the whole match filled in.
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
    if (context != nullptr && jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchScratch() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

MatchScratch& Scratch() {
  thread_local MatchScratch scratch;
  return scratch;
}

// Oniguruma's \s (what Hugging Face tokenizers' regexes use): U+0009..U+000D, U+0085 and the
// categories Zs, Zl, Zp, i.e. Unicode White_Space. PCRE2's UCP \s is \p{Z} plus \h and \v, which
// also takes U+180E MONGOLIAN VOWEL SEPARATOR (a format character since Unicode 6.3).
constexpr char kWhiteSpace[] =
    "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

// Copies the pattern `p` with `\s` and `\S` spelled as Oniguruma's white space: `[list]` / `[^list]`
// outside a character class, `list` / `\S\x{180E}` inside one. Quoting (\Q...\E), escaped
// backslashes, POSIX classes ([:alpha:]) and a leading ']' in a class are respected.
std::string WithOnigurumaWhiteSpace(const std::string& p) {
  const std::string list = kWhiteSpace;
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  size_t i = 0;
  while (i < p.size()) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      size_t len = e == 'c' ? 3 : 2;  // \cX: X is a literal, even '['
      if (e == 'Q') {
        const size_t end = p.find("\\E", i + 2);
        len = (end == std::string::npos ? p.size() : end + 2) - i;
      }
      if (e == 's') {
        out += in_class ? list : "[" + list + "]";
      } else if (e == 'S') {
        out += in_class ? std::string("\\S\\x{180E}") : "[^" + list + "]";
      } else {
        out.append(p, i, len);
      }
      i += std::min(len, p.size() - i);
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      if (const size_t end = p.find(":]", i + 2); end != std::string::npos) {
        out.append(p, i, end + 2 - i);
        i = end + 2;
        continue;
      }
    }
    out += c;
    ++i;
    if (c == ']' && in_class) {
      in_class = false;
    } else if (c == '[' && !in_class) {
      in_class = true;
      if (i < p.size() && p[i] == '^') out += p[i++];
      if (i < p.size() && p[i] == ']') out += p[i++];  // a ']' first in a class is literal
    }
  }
  return out;
}

pcre2_code* CompileUcp(const std::string& pattern, int* error_code, PCRE2_SIZE* error_offset) {
  return pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                       error_code, error_offset, nullptr);
}

}  // namespace

StatusOr<std::shared_ptr<const Regex>> Regex::Compile(const std::string& pattern) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = CompileUcp(WithOnigurumaWhiteSpace(pattern), &error_code, &error_offset);
  if (code == nullptr) {
    // Report the error against the pattern as written (offsets into the rewritten one mislead).
    if (pcre2_code* raw = CompileUcp(pattern, &error_code, &error_offset)) pcre2_code_free(raw);
    return InvalidArgumentError("bad regex '" + pattern + "': " + Pcre2Message(error_code) +
                                " at offset " + std::to_string(error_offset));
  }
  std::shared_ptr<Regex> regex(new Regex());
  regex->pattern_ = pattern;
  regex->code_ = code;
  // JIT is an optimization: when unavailable (or out of executable memory) pcre2_match falls
  // back to the interpreter transparently.
  regex->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return std::shared_ptr<const Regex>(std::move(regex));
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

Status Regex::FindAll(std::string_view subject, std::vector<Match>* out) const {
  MatchScratch& scratch = Scratch();
  if (scratch.data == nullptr) return ResourceExhaustedError("regex: cannot allocate match data");
  const auto* code = static_cast<const pcre2_code*>(code_);
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  const PCRE2_SIZE n = subject.size();
  PCRE2_SIZE start = 0;
  while (start <= n) {
    // The tokenizer validates its input once; re-checking UTF-8 on every call would be quadratic.
    // pcre2_jit_match skips the interpreter's argument checks; both give identical results.
    const int rc = jit_ ? pcre2_jit_match(code, s, n, start, 0, scratch.data, scratch.context)
                        : pcre2_match(code, s, n, start, PCRE2_NO_UTF_CHECK, scratch.data, scratch.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return ResourceExhaustedError("regex '" + pattern_ + "' failed at byte " + std::to_string(start) +
                                    ": " + Pcre2Message(rc));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(scratch.data);
    out->push_back(Match{ov[0], ov[1]});
    if (ov[1] > ov[0]) {
      start = ov[1];
    } else {
      if (ov[1] >= n) break;
      start = ov[1] + Utf8Length(static_cast<unsigned char>(subject[ov[1]]));
    }
  }
  return OkStatus();
}

Pattern Pattern::Literal(std::string text) {
  Pattern p;
  p.literal_ = std::move(text);
  return p;
}

Pattern Pattern::FromRegex(std::shared_ptr<const Regex> regex) {
  Pattern p;
  p.regex_ = std::move(regex);
  return p;
}

Status Pattern::FindAll(std::string_view subject, std::vector<Match>* out) const {
  if (regex_) return regex_->FindAll(subject, out);
  if (literal_.empty()) return OkStatus();
  size_t pos = 0;
  while ((pos = subject.find(literal_, pos)) != std::string_view::npos) {
    out->push_back(Match{pos, pos + literal_.size()});
    pos += literal_.size();
  }
  return OkStatus();
}

Status Pattern::ReplaceAll(std::string_view subject, std::string_view content, std::string* out) const {
  std::vector<Match> matches;
  UNMASK_RETURN_IF_ERROR(FindAll(subject, &matches));
  out->clear();
  size_t prev = 0;
  for (const Match& m : matches) {
    out->append(subject.data() + prev, m.begin - prev);
    out->append(content);
    prev = m.end;
  }
  out->append(subject.data() + prev, subject.size() - prev);
  return OkStatus();
}

}  // namespace unmask::tokenizer
