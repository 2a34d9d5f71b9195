// Jinja chat templates (common/jinja): the fuzz bytes are a template, parsed and rendered with a
// conversation (system, user, assistant with a tool call, tool; two tools) in the context
// transformers gives apply_chat_template. Templates are untrusted input, so beyond "no crash,
// no leak, no hang" (small step and size limits keep every input quick):
//   - an error is a Status with a message naming the template and a known reason;
//   - rendering is deterministic (a second render gives the same text or the same error);
//   - the text stays within the output limit.
// Seeds: the published templates of tests/data/chat_templates/*.jinja.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/jinja/chat_template.h"
#include "fuzz/fuzz_check.h"

using namespace unmask::jinja;

namespace {

const nlohmann::ordered_json& Context() {
  static const nlohmann::ordered_json context = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Weather in Paris? {{ x }} <think>"},
      {"role": "assistant", "content": null,
       "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "content": "{\"temp\": 21}"},
      {"role": "assistant", "content": "<think>\nok\n</think>\n\nIt is 21°C."}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
               "properties": {"city": {"type": "string"}}}}}, {"type": "function", "function": {"name": "none"}}],
    "documents": null,
    "add_generation_prompt": true,
    "bos_token": "<s>", "eos_token": "</s>"
  })");
  return context;
}

bool KnownReason(const unmask::Status& s) {
  const std::string& r = s.reason();
  return r == "TEMPLATE_SYNTAX" || r == "TEMPLATE_ERROR" || r == "TEMPLATE_RAISED" || r == "TEMPLATE_LIMIT" ||
         r == "TEMPLATE_UNSUPPORTED";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  RenderOptions options;
  options.max_output_bytes = 1 << 16;
  options.max_steps = 20000;
  options.max_macro_depth = 10;
  options.clock = [] { return std::time_t{1700000000}; };
  auto parsed = Template::Parse(text);
  if (!parsed.ok()) {
    UNMASK_FUZZ_CHECK(parsed.status().message().rfind("chat template", 0) == 0, "errors name the chat template");
    UNMASK_FUZZ_CHECK(KnownReason(parsed.status()), "a parse error has a known reason");
    return 0;
  }
  auto first = parsed->Render(Context(), options);
  auto second = parsed->Render(Context(), options);
  UNMASK_FUZZ_CHECK(first.ok() == second.ok(), "rendering is deterministic");
  if (!first.ok()) {
    UNMASK_FUZZ_CHECK(KnownReason(first.status()), "a render error has a known reason");
    UNMASK_FUZZ_CHECK(first.status().message() == second.status().message(), "the same error twice");
    return 0;
  }
  UNMASK_FUZZ_CHECK(*first == *second, "the same text twice");
  UNMASK_FUZZ_CHECK(first->size() <= options.max_output_bytes, "the text stays within the output limit");
  return 0;
}
