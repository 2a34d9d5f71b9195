// Chat templates as Hugging Face checkpoints ship them: the Jinja2 `chat_template` string of
// tokenizer_config.json, rendered as transformers' apply_chat_template renders it.
//
// A small, safe Jinja2 interpreter. Semantics are Jinja2 3.1's in the environment transformers
// builds: ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the
// loopcontrols extension ({% break %}, {% continue %}) and transformers' {% generation %} tag,
// the globals raise_exception(msg) and strftime_now(fmt), the tojson filter as json.dumps
// (ensure_ascii=False, indent, separators, sort_keys), and Jinja's default Undefined (prints as
// "", is falsy, iterates as empty; computing with it is an error). Also as Jinja: its scoping
// (scopes.h), lazy generators from select / map / unique / reverse / items, Markup from safe /
// escape (escaping what + joins to it), dict views, ranges, str % formatting.
//
// Supported: text, {{ }}, {# #}, whitespace control (- and +), {% raw %}, if/elif/else, for (with
// else, a filter `if`, tuple targets, loop.*), set (also block set and namespace attributes),
// macro, filter blocks, with, print; Jinja's expression language (no * / ** in calls); the
// filters of filters.cc and filters_seq.cc, the tests of tests.cc, the str / dict / list methods
// of methods.cc. Refused with an error naming the construct and its line:column: extends, block,
// include, import, call blocks, recursive loops, str.format and a few rarely used str methods.
// Rendering is bounded (steps, output size, also of any string or list built, macro recursion,
// nesting): templates are untrusted input.
//
// Differences from Python that remain: integers are 64-bit (overflow is an error); case mapping
// (upper, lower, title, capitalize) knows ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic
// only; a generator prints as "<generator object>" (Python adds an address) and can be iterated
// more than once; of Jinja's constant folding only the one difference it makes is kept (slicing a
// constant that cannot be sliced gives Undefined).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/util/status.h"

namespace unmask::jinja {

struct RenderOptions {
  // The rendered text, and any string the template builds, is at most this long.
  std::size_t max_output_bytes = std::size_t{8} << 20;
  // Statements run, expressions evaluated, loop iterations, list and dict elements built,
  // compared or iterated, and bytes of strings copied / 64. About a second of work; real chat
  // templates take thousands.
  std::uint64_t max_steps = 10'000'000;
  // Macros calling macros. (Whatever it is, statements and expressions nest at most 500 deep,
  // which takes about 0.5 MB of stack.)
  int max_macro_depth = 50;
  // The clock of strftime_now(); null: the system clock. Formatted in local time, as Python's
  // datetime.now().strftime(fmt).
  std::function<std::time_t()> clock;
};

class Template {
 public:
  // InvalidArgument (reason TEMPLATE_SYNTAX or TEMPLATE_UNSUPPORTED) naming the line:column of
  // what does not parse.
  static StatusOr<Template> Parse(const std::string& text);

  // `context` is an object: its members are the template's variables (a member that is absent
  // is undefined; null is None). Errors: InvalidArgument with reason TEMPLATE_ERROR (a type
  // error, an undefined value computed with, ...) or TEMPLATE_RAISED (the template called
  // raise_exception(msg); the message carries msg); ResourceExhausted with reason TEMPLATE_LIMIT
  // when a limit of `options` is hit. Every message names the line:column at fault.
  StatusOr<std::string> Render(const nlohmann::ordered_json& context, const RenderOptions& options = {}) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// Template::Parse and Render in one.
StatusOr<std::string> RenderChatTemplate(const std::string& template_text, const nlohmann::ordered_json& context,
                                         const RenderOptions& options = {});

// The variables transformers' apply_chat_template passes to the template: messages, tools (null
// when there are none), documents (null), add_generation_prompt, and the special tokens of
// tokenizer_config.json (bos_token, eos_token, unk_token, sep_token, pad_token, cls_token,
// mask_token, additional_special_tokens; an AddedToken object becomes its "content"; a null or
// absent token is left out, so that the template sees it undefined).
nlohmann::ordered_json ChatTemplateContext(const nlohmann::ordered_json& tokenizer_config,
                                           const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                           const nlohmann::ordered_json& tools = nullptr);

}  // namespace unmask::jinja
