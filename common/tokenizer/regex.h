// Regular expressions for pre-tokenizers, normalizers and decoders.
//
// Why PCRE2 and not RE2 or std::regex: the GPT-2 / LLaMA-3 split patterns end in `\s+(?!\S)`, a
// negative look-ahead that keeps the last space of a run attached to the following word. RE2
// (linear-time automata) cannot express look-around, and std::regex has neither Unicode property
// classes (`\p{L}`, `\p{N}`) nor acceptable speed. PCRE2 is compiled with UTF (code points, not
// bytes) and UCP (`\s`, `\w`, `\d` follow Unicode properties, like Oniguruma in Hugging Face
// tokenizers), and JIT-compiled when the platform supports it, which is several times faster than
// the interpreter on these patterns. `\s` and `\S` are rewritten to Oniguruma's white space (Unicode
// White_Space) before compiling: PCRE2's `\s` also takes U+180E. Known remaining differences from
// Oniguruma, in no published tokenizer.json pattern we know of: `\w` (Oniguruma adds marks and
// connector punctuation) and `\h` (a hex digit to Oniguruma, horizontal space to PCRE2).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/util/status.h"

namespace unmask::tokenizer {

struct Match {
  size_t begin = 0;  // byte offsets into the subject, [begin, end)
  size_t end = 0;
};

class Regex {
 public:
  // Compiles `pattern`; an error names the pattern, PCRE2's reason and the offset in the pattern.
  static StatusOr<std::shared_ptr<const Regex>> Compile(const std::string& pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends every non-overlapping match in `subject` (valid UTF-8), left to right. An empty match
  // is reported and the search resumes one character later, as Oniguruma's find_iter does.
  // Thread-safe: scratch space is per thread. Fails only if PCRE2 reports a matching error
  // (e.g. resource limits on pathological input).
  Status FindAll(std::string_view subject, std::vector<Match>* out) const;

  const std::string& pattern() const { return pattern_; }
  bool jit() const { return jit_; }

 private:
  Regex() = default;
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*, kept opaque so pcre2.h stays out of this header
  bool jit_ = false;
};

// Hugging Face's pattern object: {"String": "..."} (a literal) or {"Regex": "..."}.
class Pattern {
 public:
  static Pattern Literal(std::string text);
  static Pattern FromRegex(std::shared_ptr<const Regex> regex);

  // Appends the non-overlapping matches of the pattern in `subject`. An empty literal matches
  // nothing (Hugging Face treats it as "no split").
  Status FindAll(std::string_view subject, std::vector<Match>* out) const;

  // Replaces every match by `content`.
  Status ReplaceAll(std::string_view subject, std::string_view content, std::string* out) const;

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;
};

}  // namespace unmask::tokenizer
