// `unmask generate` / `submit` with tools (chat only): --tools FILE (a JSON array of OpenAI tool
// objects, as the HTTP API takes them) and --tool-choice auto|none|required|NAME, and how a
// completed job's tool calls are printed.
#pragma once

#include <iosfwd>
#include <string>

#include "common/util/status.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::cli {

struct ToolFlags {
  std::string tools_file;   // --tools
  std::string tool_choice;  // --tool-choice
};

// Sets request.chat.tools and tool_choice. Errors name the flag and the file:
// "--tools t.json: cannot read it: ...", "--tools t.json: not JSON", "--tools t.json:
// tools[0].function.name: ...", "--tool-choice: needs --chat".
Status ApplyToolFlags(const ToolFlags& flags, v1::GenerateRequest& request);

// "tool call call_<job>_0: get_weather {"city":"Paris"}" per call; nothing when there are none.
void PrintToolCalls(std::ostream& out, const v1::Completed& completed, const std::string& tag = "");

}  // namespace unmask::cli
