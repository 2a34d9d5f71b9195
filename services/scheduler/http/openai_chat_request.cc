#include "services/scheduler/http/openai_chat_request.h"

#include <nlohmann/json.hpp>

#include "services/scheduler/http/openai_json.h"
#include "services/scheduler/request_validation.h"
#include "services/scheduler/tool_calls.h"

namespace unmask::scheduler::http {
namespace {

using json = nlohmann::ordered_json;

constexpr std::size_t kMaxTools = 128;        // OpenAI's limit
constexpr std::size_t kMaxToolCallId = 256;

StatusOr<std::string> ToolName(const json& v, const std::string& field) {
  UNMASK_ASSIGN_OR_RETURN(std::string name, String(v, field, 64));
  if (!IsToolName(name)) return Bad(field, "must be 1-64 of a-z, A-Z, 0-9, _ and -", v);
  return name;
}

// A JSON object given as text (OpenAI's form) or as the object itself, as compact text.
StatusOr<std::string> JsonObjectText(const json& v, const std::string& field) {
  if (v.is_object()) return v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!v.is_string() || !IsJsonObjectText(v.get<std::string>()))
    return Bad(field, "must be a JSON object (as a string)", v);
  return v.get<std::string>();
}

Status ParseToolCall(const json& c, const std::string& field, v1::ToolCall& out) {
  if (!c.is_object()) return Bad(field, "must be {\"id\", \"type\": \"function\", \"function\": {name, arguments}}", c);
  const json* id = Field(c, "id");
  if (!id) return InvalidFieldError(field + ".id", "is required");
  UNMASK_ASSIGN_OR_RETURN(std::string id_text, String(*id, field + ".id", kMaxToolCallId));
  out.set_id(std::move(id_text));
  if (const json* type = Field(c, "type"); type && !(type->is_string() && *type == "function"))
    return Bad(field + ".type", "must be \"function\"", *type);
  const json* function = Field(c, "function");
  if (!function || !function->is_object())
    return Bad(field + ".function", "must be an object with name and arguments", function ? *function : json());
  const json* name = Field(*function, "name");
  if (!name) return InvalidFieldError(field + ".function.name", "is required");
  UNMASK_ASSIGN_OR_RETURN(std::string name_text, ToolName(*name, field + ".function.name"));
  out.set_name(std::move(name_text));
  const json* arguments = Field(*function, "arguments");
  if (!arguments) return InvalidFieldError(field + ".function.arguments", "is required");
  UNMASK_ASSIGN_OR_RETURN(std::string arguments_text, JsonObjectText(*arguments, field + ".function.arguments"));
  out.set_arguments(std::move(arguments_text));
  return OkStatus();
}

// One message's tool fields: an assistant's tool_calls, a tool's tool_call_id.
Status ParseMessageTools(const json& m, const std::string& field, const std::string& role, v1::ChatMessage& msg) {
  if (const json* calls = Field(m, "tool_calls")) {
    if (role != "assistant") return Bad(field + ".tool_calls", "only an assistant message makes tool calls", *calls);
    if (!calls->is_array()) return Bad(field + ".tool_calls", "must be an array of tool calls", *calls);
    for (std::size_t k = 0; k < calls->size(); ++k)
      UNMASK_RETURN_IF_ERROR(ParseToolCall((*calls)[k], field + ".tool_calls[" + std::to_string(k) + "]", *msg.add_tool_calls()));
  }
  const json* id = Field(m, "tool_call_id");
  if (role == "tool") {
    if (!id) return InvalidFieldError(field + ".tool_call_id", "is required (the call this answers)");
    UNMASK_ASSIGN_OR_RETURN(std::string text, String(*id, field + ".tool_call_id", kMaxToolCallId));
    msg.set_tool_call_id(std::move(text));
  } else if (id) {
    return Bad(field + ".tool_call_id", "only a tool message answers a call", *id);
  }
  return OkStatus();
}

Status ParseMessages(const json& body, v1::ChatMessages& out) {
  const json* messages = Field(body, "messages");
  if (!messages) return InvalidFieldError("messages", "is required");
  if (!messages->is_array() || messages->empty()) return Bad("messages", "must be a non-empty array of messages", *messages);
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string field = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return Bad(field, "must be an object with role and content", m);
    const json* role_v = Field(m, "role");
    if (!role_v) return InvalidFieldError(field + ".role", "is required");
    UNMASK_ASSIGN_OR_RETURN(std::string role, String(*role_v, field + ".role", 32));
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      return Bad(field + ".role", "must be system, developer, user, assistant or tool", *role_v);
    if (role == "system" && i != 0) return Bad(field + ".role", "a system message is allowed only first", *role_v);
    if (i + 1 == messages->size() && role != "user" && role != "tool")
      return Bad(field + ".role", "the last message must be the user's or a tool's answer", *role_v);
    std::string content;
    if (const json* c = Field(m, "content")) {
      UNMASK_ASSIGN_OR_RETURN(content, MessageContent(*c, field + ".content"));
    } else if (role != "assistant") {
      return InvalidFieldError(field + ".content", "is required");
    }
    bytes += content.size();
    if (bytes > kMaxPromptBytes)
      return Bad("messages", "must hold at most " + std::to_string(kMaxPromptBytes) + " bytes of content", json(bytes));
    auto* msg = out.add_messages();
    msg->set_role(role);
    msg->set_content(std::move(content));
    UNMASK_RETURN_IF_ERROR(ParseMessageTools(m, field, role, *msg));
  }
  return OkStatus();
}

Status ParseTool(const json& t, const std::string& field, v1::Tool& out) {
  if (!HasType(t, "function")) return Bad(field, "must be {\"type\": \"function\", \"function\": {...}}", t);
  const json* function = Field(t, "function");
  if (!function || !function->is_object())
    return Bad(field + ".function", "must be an object with a name", function ? *function : json());
  const std::string f = field + ".function";
  const json* name = Field(*function, "name");
  if (!name) return InvalidFieldError(f + ".name", "is required");
  UNMASK_ASSIGN_OR_RETURN(std::string name_text, ToolName(*name, f + ".name"));
  out.set_name(std::move(name_text));
  if (const json* d = Field(*function, "description")) {
    UNMASK_ASSIGN_OR_RETURN(std::string text, String(*d, f + ".description", kMaxPromptBytes, /*allow_empty=*/true));
    out.set_description(std::move(text));
  }
  if (const json* p = Field(*function, "parameters")) {
    if (!p->is_object()) return Bad(f + ".parameters", "must be a JSON Schema object", *p);
    out.set_parameters(p->dump(-1, ' ', false, json::error_handler_t::replace));
  }
  if (const json* s = Field(*function, "strict"); s && !s->is_boolean()) return Bad(f + ".strict", "must be true or false", *s);
  return OkStatus();
}

Status ParseToolChoice(const json& v, v1::ChatMessages& out) {
  std::string choice;
  if (v.is_string()) {
    choice = v.get<std::string>();
    if (choice != "auto" && choice != "none" && choice != "required")
      return Bad("tool_choice", "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}", v);
  } else if (HasType(v, "function") && Field(v, "function") && v["function"].is_object() && Field(v["function"], "name")) {
    UNMASK_ASSIGN_OR_RETURN(choice, ToolName(v["function"]["name"], "tool_choice.function.name"));
    bool known = false;
    for (const auto& t : out.tools()) known = known || t.name() == choice;
    if (!known) return Bad("tool_choice.function.name", "must name one of the tools", v["function"]["name"]);
  } else {
    return Bad("tool_choice", "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}", v);
  }
  if (choice == "required" && out.tools().empty()) return Bad("tool_choice", "\"required\" needs tools", v);
  out.set_tool_choice(choice);
  return OkStatus();
}

}  // namespace

Status ParseTools(const json& tools, v1::ChatMessages& chat) {
  if (!tools.is_array()) return Bad("tools", "must be an array of tools", tools);
  if (tools.size() > kMaxTools) return Bad("tools", "must hold at most " + std::to_string(kMaxTools) + " tools", json(tools.size()));
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const std::string field = "tools[" + std::to_string(i) + "]";
    v1::Tool& tool = *chat.add_tools();
    UNMASK_RETURN_IF_ERROR(ParseTool(tools[i], field, tool));
    for (int k = 0; k + 1 < chat.tools_size(); ++k) {
      if (chat.tools(k).name() == tool.name())
        return Bad(field + ".function.name", "must differ from every other tool's", json(tool.name()));
    }
  }
  return OkStatus();
}

Status ParseChat(const json& body, v1::GenerateRequest& r) {
  v1::ChatMessages& chat = *r.mutable_chat();
  UNMASK_RETURN_IF_ERROR(ParseMessages(body, chat));
  UNMASK_RETURN_IF_ERROR(ValidateToolAnswers(chat.messages(), "messages"));
  if (const json* tools = Field(body, "tools")) UNMASK_RETURN_IF_ERROR(ParseTools(*tools, chat));
  if (const json* v = Field(body, "tool_choice")) UNMASK_RETURN_IF_ERROR(ParseToolChoice(*v, chat));
  if (const json* v = Field(body, "parallel_tool_calls")) {
    if (!v->is_boolean()) return Bad("parallel_tool_calls", "must be true or false", *v);
    chat.set_single_tool_call(!v->get<bool>());
  }
  return OkStatus();
}

}  // namespace unmask::scheduler::http
