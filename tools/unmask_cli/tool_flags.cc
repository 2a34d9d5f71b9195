#include "tools/unmask_cli/tool_flags.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "services/scheduler/http/openai_chat_request.h"

namespace unmask::cli {

Status ApplyToolFlags(const ToolFlags& flags, v1::GenerateRequest& request) {
  if (flags.tools_file.empty() && flags.tool_choice.empty()) return OkStatus();
  if (!request.has_chat()) return InvalidArgumentError(flags.tools_file.empty() ? "--tool-choice: needs --chat" : "--tools: needs --chat");
  v1::ChatMessages& chat = *request.mutable_chat();
  if (!flags.tools_file.empty()) {
    const std::string where = "--tools " + flags.tools_file;
    std::ifstream in(flags.tools_file);
    if (!in) return InvalidArgumentError(where + ": cannot read it: " + std::strerror(errno));
    std::stringstream text;
    text << in.rdbuf();
    const auto tools = nlohmann::ordered_json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (tools.is_discarded()) return InvalidArgumentError(where + ": not JSON");
    const Status parsed = scheduler::http::ParseTools(tools, chat);
    if (!parsed.ok()) return InvalidArgumentError(where + ": " + parsed.message());
  }
  // Checked by the scheduler against the tools (a name must be one of them).
  chat.set_tool_choice(flags.tool_choice);
  return OkStatus();
}

void PrintToolCalls(std::ostream& out, const v1::Completed& completed, const std::string& tag) {
  for (const auto& call : completed.tool_calls())
    out << tag << "tool call " << call.id() << ": " << call.name() << " " << call.arguments() << "\n";
}

}  // namespace unmask::cli
