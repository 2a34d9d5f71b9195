// Tool calls read from a model's output (services/scheduler/tool_calls.h): the fuzz bytes are the
// output text. The parse must not crash, and: content is the text before the first call (all of
// it when no call parsed); each call has a name and an object of arguments; streaming's
// ToolCallStart never passes the first "<tool_call>" and never cuts inside the text's end wrongly;
// a forced opening is read before the text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "services/scheduler/tool_calls.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const unmask::scheduler::ParsedToolCalls p = unmask::scheduler::ParseToolCalls(text);
  const std::size_t first = text.find(unmask::scheduler::kToolCallOpen);
  if (p.calls.empty()) {
    UNMASK_FUZZ_CHECK(p.content == text, "no call: the whole text is content");
  } else {
    UNMASK_FUZZ_CHECK(first != std::string::npos && p.content == text.substr(0, first), "content ends at the first call");
    for (const auto& call : p.calls) {
      UNMASK_FUZZ_CHECK(!call.name().empty(), "a call has a name");
      UNMASK_FUZZ_CHECK(unmask::scheduler::IsJsonObjectText(call.arguments()), "its arguments are a JSON object");
    }
  }
  const std::size_t start = unmask::scheduler::ToolCallStart(text);
  UNMASK_FUZZ_CHECK(start <= text.size(), "the streaming limit is inside the text");
  UNMASK_FUZZ_CHECK(first == std::string::npos || start == first, "and stops at the first call");
  UNMASK_FUZZ_CHECK(text.substr(0, start).find(unmask::scheduler::kToolCallOpen) == std::string::npos,
                    "no call is released as content");
  unmask::v1::ToolUse use;
  use.set_parse(true);
  use.set_forced_prefix(unmask::scheduler::ForcedToolCallPrefix("f"));
  const unmask::scheduler::ParsedToolCalls forced = unmask::scheduler::ReadToolCalls(use, "j", text);
  UNMASK_FUZZ_CHECK(forced.calls.empty() || forced.content.empty(), "a forced call has no content before it");
  UNMASK_FUZZ_CHECK(forced.calls.empty() || forced.calls[0].name() == "f", "and is the forced tool's");
  return 0;
}
