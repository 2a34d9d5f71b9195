#include "services/scheduler/tool_calls.h"

#include <nlohmann/json.hpp>

namespace unmask::scheduler {
namespace {

using nlohmann::ordered_json;

ordered_json ParseJson(const std::string& text) {
  return ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
}

// One call's JSON, or false when it is not {"name": "<string>", "arguments": {...}}.
bool ReadCall(const std::string& body, v1::ToolCall& call) {
  const ordered_json j = ParseJson(body);
  if (j.is_discarded() || !j.is_object()) return false;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) return false;
  ordered_json arguments = ordered_json::object();
  if (auto a = j.find("arguments"); a != j.end() && !a->is_null()) {
    arguments = a->is_string() ? ParseJson(a->get<std::string>()) : *a;
    if (arguments.is_discarded() || !arguments.is_object()) return false;
  }
  call.set_name(name->get<std::string>());
  call.set_arguments(arguments.dump(-1, ' ', false, ordered_json::error_handler_t::replace));
  return true;
}

}  // namespace

bool IsToolName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool IsJsonObjectText(const std::string& text) {
  const ordered_json j = ParseJson(text);
  return !j.is_discarded() && j.is_object();
}

std::string ForcedToolCallPrefix(const std::string& tool_choice) {
  if (tool_choice.empty() || tool_choice == "auto" || tool_choice == "none") return "";
  const std::string open = std::string(kToolCallOpen) + "\n{\"name\": \"";
  if (tool_choice == "required") return open;
  return open + tool_choice + "\", \"arguments\": ";
}

ParsedToolCalls ParseToolCalls(const std::string& text) {
  ParsedToolCalls out;
  out.content = text;
  const std::string open = kToolCallOpen, close = kToolCallClose;
  const std::size_t first = text.find(open);
  if (first == std::string::npos) return out;
  std::vector<v1::ToolCall> calls;
  std::size_t at = first;
  while (at != std::string::npos) {
    const std::size_t body = at + open.size();
    const std::size_t end = text.find(close, body);
    v1::ToolCall call;
    if (!ReadCall(text.substr(body, end == std::string::npos ? std::string::npos : end - body), call)) return out;
    calls.push_back(std::move(call));
    if (end == std::string::npos) break;
    at = text.find(open, end + close.size());
  }
  out.content = text.substr(0, first);
  out.calls = std::move(calls);
  return out;
}

std::size_t ToolCallStart(std::string_view text) {
  const std::string_view open = kToolCallOpen;
  const std::size_t found = text.find(open);
  if (found != std::string_view::npos) return found;
  for (std::size_t n = std::min(open.size() - 1, text.size()); n > 0; --n) {
    if (text.substr(text.size() - n) == open.substr(0, n)) return text.size() - n;
  }
  return text.size();
}

v1::ToolUse ToolUseOf(const v1::ChatMessages& chat) {
  v1::ToolUse use;
  if (chat.tools().empty() || chat.tool_choice() == "none") return use;
  use.set_parse(true);
  use.set_forced_prefix(ForcedToolCallPrefix(chat.tool_choice()));
  use.set_single(chat.single_tool_call());
  return use;
}

ParsedToolCalls ReadToolCalls(const v1::ToolUse& use, const std::string& job_id, const std::string& text) {
  if (!use.parse()) return {};
  ParsedToolCalls parsed = ParseToolCalls(use.forced_prefix() + text);
  if (use.single() && parsed.calls.size() > 1) parsed.calls.resize(1);
  for (std::size_t i = 0; i < parsed.calls.size(); ++i) parsed.calls[i].set_id("call_" + job_id + "_" + std::to_string(i));
  return parsed;
}

}  // namespace unmask::scheduler
