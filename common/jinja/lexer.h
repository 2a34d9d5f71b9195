// Jinja2's lexer with transformers' settings (trim_blocks, lstrip_blocks, no
// keep_trailing_newline): text, {{ }}, {% %}, {# #}, {% raw %}, the '-' and '+' whitespace
// controls, and the tokens inside tags. Rules follow jinja2/lexer.py (3.1) one for one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace unmask::jinja {

enum class Tok : std::uint8_t {
  kData,        // template text (value: the text)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // value: the name
  kString,      // value: the decoded string
  kInt,         // int_value
  kFloat,       // float_value
  kOp,          // value: the operator ("+", "//", "(", "|", ...)
  kEof,
};

struct Token {
  Tok type = Tok::kEof;
  std::uint32_t pos = 0;  // byte offset in the normalized source
  std::string value;
  std::int64_t int_value = 0;
  double float_value = 0;
};

// Jinja's source normalization: "\r\n" and "\r" become "\n", and one trailing newline is dropped.
std::string NormalizeSource(const std::string& text);

// Tokenizes a normalized source. Throws TemplateError (kReasonSyntax) on a lexical error.
std::vector<Token> Lex(const std::string& source);

// A token as an error message names it: "'endfor'", "end of statement block", ...
std::string DescribeToken(const Token& token);

}  // namespace unmask::jinja
