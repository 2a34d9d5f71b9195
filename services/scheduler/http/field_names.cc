#include "services/scheduler/http/field_names.h"

#include <utility>

namespace unmask::scheduler::http {
namespace {

// gRPC name (or prefix of one) -> OpenAI name. Rows are tried in order; a prefix row matches the
// name itself or the name followed by '.' or '[' ("ids" matches "ids[3]", not "idsx"), and the
// rest of the name is kept. "params." fields the HTTP API names alike (steps, temperature,
// sampler, ...) need only the prefix row.
constexpr std::pair<const char*, const char*> kNames[] = {
    {"params.gen_length", "max_tokens"},  // OpenAI's name of the tokens to generate
    {"params", ""},                       // the HTTP API has the sampler's fields at top level
    {"gen_length", "max_tokens"},         // as a check of the sampler's own params names it
    {"text", "prompt"},
    {"ids", "prompt"},                    // a prompt of token ids
    {"chat.messages", "messages"},
    {"chat.tools", "tools"},
    {"chat.tool_choice", "tool_choice"},
    {"chat", "messages"},
    {"template_text", "template"},        // unmask's template with holes
    {"continuation", "likelihood.continuation"},  // unmask's likelihood of a continuation
};

bool Continues(const std::string& name, std::size_t at) {
  return at == name.size() || name[at] == '.' || name[at] == '[';
}

}  // namespace

std::string OpenAiFieldName(const std::string& grpc_field) {
  for (const auto& [from, to] : kNames) {
    const std::string prefix = from;
    if (grpc_field.compare(0, prefix.size(), prefix) != 0 || !Continues(grpc_field, prefix.size())) continue;
    std::string rest = grpc_field.substr(prefix.size());
    if (*to == '\0') {  // "params.steps" -> "steps"; "params" alone stays
      if (rest.empty() || rest[0] != '.') return grpc_field;
      rest.erase(0, 1);
    }
    return to + rest;
  }
  return grpc_field;
}

}  // namespace unmask::scheduler::http
