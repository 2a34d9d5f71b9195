// Bad templates: they fail, never crash or run away, and the error names what is wrong and where.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "common/jinja/chat_template.h"

namespace unmask::jinja {
namespace {

using nlohmann::ordered_json;

Status Fails(const std::string& text, const ordered_json& context = nullptr, const RenderOptions& options = {}) {
  StatusOr<std::string> r = RenderChatTemplate(text, context, options);
  EXPECT_FALSE(r.ok()) << text << " rendered " << (r.ok() ? *r : "");
  return r.ok() ? OkStatus() : r.status();
}

// The error's message holds every one of `parts`.
void ExpectError(const std::string& text, std::initializer_list<const char*> parts, const char* reason,
                 const ordered_json& context = nullptr, const RenderOptions& options = {}) {
  const Status s = Fails(text, context, options);
  for (const char* part : parts) EXPECT_NE(s.message().find(part), std::string::npos) << s.message() << "\n  lacks: " << part;
  EXPECT_EQ(s.reason(), reason) << s.message();
}

TEST(JinjaErrorsTest, UnclosedBlocksNameTheBlockAndWhereItOpened) {
  ExpectError("line 1\n  {% if x %}\nbody", {"unexpected end of template", "'if' block at 2:6", "'elif', 'else' or 'endif'"},
              "TEMPLATE_SYNTAX");
  ExpectError("{% for m in messages %}{% if m %}x{% endfor %}", {"unknown tag 'endfor'", "'if' at 1:27"}, "TEMPLATE_SYNTAX");
  ExpectError("{% macro f() %}x", {"'macro' block at 1:4", "'endmacro'"}, "TEMPLATE_SYNTAX");
  ExpectError("{{ x ", {"1:6", "expected end of print statement"}, "TEMPLATE_SYNTAX");
  ExpectError("{% if x", {"expected end of statement block"}, "TEMPLATE_SYNTAX");
  ExpectError("ok {# never closed", {"1:4", "missing end of comment tag"}, "TEMPLATE_SYNTAX");
  ExpectError("{% raw %}never closed", {"missing end of raw directive"}, "TEMPLATE_SYNTAX");
  ExpectError("{{ 'never closed }}", {"1:4", "a string that is never closed"}, "TEMPLATE_SYNTAX");
  ExpectError("{% endif %}", {"1:4", "unknown tag 'endif'"}, "TEMPLATE_SYNTAX");
}

TEST(JinjaErrorsTest, SyntaxErrorsNameTheConstructAndItsPosition) {
  ExpectError("a\n{{ x | nosuch }}", {"2:8", "no filter named 'nosuch'"}, "TEMPLATE_SYNTAX");
  ExpectError("{{ x is nosuch }}", {"1:9", "no test named 'nosuch'"}, "TEMPLATE_SYNTAX");
  ExpectError("{% frobnicate %}", {"1:4", "unknown tag 'frobnicate'"}, "TEMPLATE_SYNTAX");
  ExpectError("{{ a $ b }}", {"1:6", "unexpected char '$'"}, "TEMPLATE_SYNTAX");
  ExpectError("{{ (1 }}", {"unexpected '}', expected ')'"}, "TEMPLATE_SYNTAX");
  ExpectError("{{ 1 + }}", {"1:8", "unexpected end of print statement"}, "TEMPLATE_SYNTAX");
  ExpectError("{{ }}", {"expected an expression"}, "TEMPLATE_SYNTAX");
  ExpectError("{% break %}", {"'break' outside loop"}, "TEMPLATE_SYNTAX");
  ExpectError("{% set 1 = 2 %}", {"can't assign"}, "TEMPLATE_SYNTAX");
  ExpectError("{{ '\\x4' }}", {"truncated \\x escape"}, "TEMPLATE_SYNTAX");
  ExpectError("{{ 99999999999999999999 }}", {"integer literal too large"}, "TEMPLATE_SYNTAX");
}

TEST(JinjaErrorsTest, UnsupportedJinjaIsRefusedByName) {
  ExpectError("{% include 'other.jinja' %}", {"1:4", "'include' tag is not supported"}, "TEMPLATE_UNSUPPORTED");
  ExpectError("{% extends 'base' %}", {"'extends' tag"}, "TEMPLATE_UNSUPPORTED");
  ExpectError("{% call m() %}{% endcall %}", {"'call' tag"}, "TEMPLATE_UNSUPPORTED");
  ExpectError("{% for x in y recursive %}{% endfor %}", {"recursive for loops"}, "TEMPLATE_UNSUPPORTED");
  ExpectError("{{ f(*args) }}", {"*args"}, "TEMPLATE_UNSUPPORTED");
  ExpectError("{{ '{}'.format(1) }}", {"str.format() is not supported"}, "TEMPLATE_UNSUPPORTED");
}

TEST(JinjaErrorsTest, RaiseExceptionCarriesTheMessage) {
  const Status s = Fails("ok\n  {{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.reason(), "TEMPLATE_RAISED");
  EXPECT_NE(s.message().find("2:6: Conversation roles must alternate user/assistant/user/assistant/..."), std::string::npos)
      << s.message();
}

TEST(JinjaErrorsTest, RenderErrorsNameTheValueAndPosition) {
  ExpectError("{{ x.y }}", {"1:4", "'x' is undefined", "(at 'x.y }}')"}, "TEMPLATE_ERROR");
  ExpectError("{{ messages[0].content.upper() }}", {"'dict object' has no attribute 'content'"}, "TEMPLATE_ERROR",
              {{"messages", {ordered_json::object()}}});
  ExpectError("\n\n{{ 'a' + 1 }}", {"3:8", "can only concatenate str (not \"int\") to str"}, "TEMPLATE_ERROR");
  ExpectError("{% for x in 5 %}{% endfor %}", {"1:13", "'int' object is not iterable"}, "TEMPLATE_ERROR");
  ExpectError("{{ 1 // 0 }}", {"division or modulo by zero"}, "TEMPLATE_ERROR");
  ExpectError("{{ [1].append(2) }}", {"access to attribute 'append' of 'list' object is unsafe"}, "TEMPLATE_ERROR");
  ExpectError("{% set x = 1 %}{% set x.y = 2 %}", {"cannot assign attribute on non-namespace object"}, "TEMPLATE_ERROR");
  ExpectError("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", {"macro 'm' takes not more than 1 argument(s)"}, "TEMPLATE_ERROR");
  ExpectError("{% macro m() %}{{ 1 < 'a' }}{% endmacro %}\n{{ m() }}", {"1:21", "'<' not supported", "in macro 'm' called at 2:4"},
              "TEMPLATE_ERROR");
  ExpectError("{{ 9223372036854775807 + 1 }}", {"integer overflow"}, "TEMPLATE_ERROR");
  ExpectError("{{ x|tojson }}", {"Object of type Undefined is not JSON serializable"}, "TEMPLATE_ERROR");
}

TEST(JinjaErrorsTest, DeepRecursionStops) {
  ExpectError("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", {"macros call each other more than 50 deep"},
              "TEMPLATE_LIMIT");
  ExpectError("{{ " + std::string(1000, '(') + "1" + std::string(1000, ')') + " }}", {"nested more than 64 deep"},
              "TEMPLATE_SYNTAX");
  ExpectError("{{ " + std::string(1000, '[') + std::string(1000, ']') + " }}", {"nested more than 64 deep"}, "TEMPLATE_SYNTAX");
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  ExpectError(chain + " }}", {"expression too long"}, "TEMPLATE_LIMIT");
  std::string nots = "{{ ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  ExpectError(nots + "1 }}", {"nested more than 64 deep"}, "TEMPLATE_SYNTAX");
  std::string blocks;
  for (int i = 0; i < 1000; ++i) blocks += "{% if true %}";
  ExpectError(blocks, {"blocks nested more than 64 deep"}, "TEMPLATE_SYNTAX");
  ExpectError("{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}{% endfor %}",
              {"nested more than 200 deep"}, "TEMPLATE_LIMIT");
  RenderOptions deep;  // past the macro limit, the interpreter's own nesting limit holds the stack
  deep.max_macro_depth = 100000;
  ExpectError("{% macro f(n) %}{% for i in [1] %}{{ (((f(n - 1) ~ '') ~ '') ~ '') }}{% endfor %}{% endmacro %}{{ f(100000) }}",
              {"nests evaluation more than 500 deep", "(in macro 'f' called at 1:"}, "TEMPLATE_LIMIT", nullptr, deep);
}

TEST(JinjaErrorsTest, HugeLoopsAndOutputsStopQuickly) {
  const auto start = std::chrono::steady_clock::now();
  ExpectError("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
              {"more than 10000000 steps"}, "TEMPLATE_LIMIT");
  ExpectError("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", {"output is longer than 8388608 bytes"}, "TEMPLATE_LIMIT");
  ExpectError("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
              {"byte limit"}, "TEMPLATE_LIMIT");
  ExpectError("{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
              {"byte limit"}, "TEMPLATE_LIMIT");
  ExpectError("{{ 'x' * 100000000000 }}", {"byte limit"}, "TEMPLATE_LIMIT");
  ExpectError("{{ [0] * 100000000000 }}", {"byte limit"}, "TEMPLATE_LIMIT");
  ExpectError("{{ range(1000000)|length }}", {"Range too big"}, "TEMPLATE_LIMIT");
  ExpectError("{{ 'x'|indent(100000000) }}", {"too wide"}, "TEMPLATE_LIMIT");
  ExpectError("{{ [1]|tojson(indent=100000000) }}", {"too wide"}, "TEMPLATE_LIMIT");
  ExpectError("{% set ns = namespace(s='ab') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ 'abcdefgh' %}{% endfor %}",
              {"steps"}, "TEMPLATE_LIMIT");
  RenderOptions small;
  small.max_output_bytes = 10;
  small.max_steps = 1000;
  ExpectError("{{ 'x' * 11 }}", {"10-byte limit"}, "TEMPLATE_LIMIT", nullptr, small);
  ExpectError("{% for i in range(2000) %}{% endfor %}", {"more than 1000 steps"}, "TEMPLATE_LIMIT", nullptr, small);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(JinjaErrorsTest, SelfReferencesDoNotHang) {
  // A namespace holding itself, a macro in the scope it captured: rendering ends, memory is freed
  // (the sanitizer builds check the latter).
  StatusOr<std::string> r = RenderChatTemplate(
      "{% set ns = namespace() %}{% set ns.self = ns %}{{ ns.self.self.self is defined }}"
      "{% macro m() %}{{ m is defined }}{% endmacro %}{{ m() }}",
      nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "TrueTrue");
  const Status s = Fails("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}");
  EXPECT_EQ(s.reason(), "TEMPLATE_LIMIT") << s.message();
}

}  // namespace
}  // namespace unmask::jinja
