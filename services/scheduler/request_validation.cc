#include "services/scheduler/request_validation.h"

#include <cmath>

#include "common/generation/params_proto.h"
#include "services/scheduler/tool_calls.h"

namespace unmask::scheduler {
namespace {

// `field` as the gRPC API names it; it becomes the error's detail.field.
Status Bad(const std::string& field, const std::string& rule, const std::string& got) {
  return InvalidFieldError(field, rule + ", got " + got);
}

std::string Num(double v) {
  std::string s = std::to_string(v);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

Status ValidateToolCall(const v1::ToolCall& call, const std::string& field) {
  if (call.id().empty()) return Bad(field + ".id", "must not be empty", "an empty string");
  if (call.id().size() > 256) return Bad(field + ".id", "must be at most 256 bytes", std::to_string(call.id().size()));
  if (!IsToolName(call.name()))
    return Bad(field + ".name", "must be 1-64 of a-z, A-Z, 0-9, _ and -", "'" + call.name().substr(0, 80) + "'");
  if (!IsJsonObjectText(call.arguments()))
    return Bad(field + ".arguments", "must be a JSON object", "'" + call.arguments().substr(0, 40) + "'");
  return OkStatus();
}

Status ValidateMessage(const v1::ChatMessage& m, int i) {
  const std::string field = "chat.messages[" + std::to_string(i) + "]";
  const auto& role = m.role();
  if (role != "system" && role != "user" && role != "assistant" && role != "tool")
    return Bad(field + ".role", "must be system, user, assistant or tool", "'" + role + "'");
  if (role == "system" && i != 0) return Bad(field + ".role", "system is allowed only as the first message", "system");
  if (!m.tool_calls().empty() && role != "assistant")
    return Bad(field + ".tool_calls", "only an assistant message makes tool calls", "a " + role + " message");
  for (int k = 0; k < m.tool_calls_size(); ++k)
    UNMASK_RETURN_IF_ERROR(ValidateToolCall(m.tool_calls(k), field + ".tool_calls[" + std::to_string(k) + "]"));
  if (role == "tool" && m.tool_call_id().empty())
    return Bad(field + ".tool_call_id", "a tool's answer must name the call it answers", "an empty string");
  if (role != "tool" && !m.tool_call_id().empty())
    return Bad(field + ".tool_call_id", "only a tool message answers a call", "a " + role + " message");
  return OkStatus();
}

}  // namespace

Status ValidateToolAnswers(const google::protobuf::RepeatedPtrField<v1::ChatMessage>& m, const std::string& prefix) {
  const v1::ChatMessage* caller = nullptr;
  for (int i = 0; i < m.size(); ++i) {
    if (m[i].role() == "assistant") caller = &m[i];
    if (m[i].role() != "tool") continue;
    bool answered = false;
    for (int k = 0; caller != nullptr && k < caller->tool_calls_size(); ++k)
      answered = answered || caller->tool_calls(k).id() == m[i].tool_call_id();
    if (!answered)
      return Bad(prefix + "[" + std::to_string(i) + "].tool_call_id",
                 "must be the id of a call the last assistant message before it made", "'" + m[i].tool_call_id().substr(0, 80) + "'");
  }
  return OkStatus();
}

namespace {

Status ValidateTools(const v1::ChatMessages& chat) {
  constexpr int kMaxTools = 128;  // OpenAI's limit
  if (chat.tools_size() > kMaxTools)
    return Bad("chat.tools", "must hold at most " + std::to_string(kMaxTools) + " tools", std::to_string(chat.tools_size()));
  for (int i = 0; i < chat.tools_size(); ++i) {
    const v1::Tool& t = chat.tools(i);
    const std::string field = "chat.tools[" + std::to_string(i) + "]";
    if (!IsToolName(t.name()))
      return Bad(field + ".name", "must be 1-64 of a-z, A-Z, 0-9, _ and -", "'" + t.name().substr(0, 80) + "'");
    for (int k = 0; k < i; ++k) {
      if (chat.tools(k).name() == t.name()) return Bad(field + ".name", "must differ from every other tool's", "'" + t.name() + "' twice");
    }
    if (!t.parameters().empty() && !IsJsonObjectText(t.parameters()))
      return Bad(field + ".parameters", "must be a JSON Schema object (or empty)", "'" + t.parameters().substr(0, 40) + "'");
  }
  const std::string& choice = chat.tool_choice();
  if (choice.empty() || choice == "auto" || choice == "none") return OkStatus();
  if (chat.tools().empty())
    return Bad("chat.tool_choice", "'required' or a tool's name needs tools", "'" + choice.substr(0, 80) + "' without tools");
  if (choice == "required") return OkStatus();
  for (const auto& t : chat.tools()) {
    if (t.name() == choice) return OkStatus();
  }
  return Bad("chat.tool_choice", "must be auto, none, required or the name of one of the tools", "'" + choice.substr(0, 80) + "'");
}

Status ValidatePrompt(const v1::GenerateRequest& r) {
  switch (r.prompt_case()) {
    case v1::GenerateRequest::kText:
      if (r.text().empty()) return Bad("text", "must not be empty", "an empty string");
      if (r.text().size() > kMaxPromptBytes)
        return Bad("text", "must be at most " + std::to_string(kMaxPromptBytes) + " bytes", std::to_string(r.text().size()));
      return OkStatus();
    case v1::GenerateRequest::kChat: {
      const auto& m = r.chat().messages();
      if (m.empty()) return Bad("chat.messages", "must hold at least one message", "none");
      for (int i = 0; i < m.size(); ++i) UNMASK_RETURN_IF_ERROR(ValidateMessage(m[i], i));
      UNMASK_RETURN_IF_ERROR(ValidateToolAnswers(m, "chat.messages"));
      const std::string& last = m[m.size() - 1].role();
      if (last != "user" && last != "tool")
        return Bad("chat.messages", "must end with a user message or a tool's answer", "'" + last + "'");
      return ValidateTools(r.chat());
    }
    case v1::GenerateRequest::kIds:
      if (r.ids().ids().empty()) return Bad("ids", "must hold at least one token id", "none");
      for (int i = 0; i < r.ids().ids_size(); ++i) {
        if (r.ids().ids(i) < 0) return Bad("ids[" + std::to_string(i) + "]", "must be >= 0", std::to_string(r.ids().ids(i)));
      }
      return OkStatus();
    case v1::GenerateRequest::PROMPT_NOT_SET:
      break;
  }
  return InvalidFieldError("prompt", "set one of text, chat or ids");
}

// What a request that generates nothing (`what`: a likelihood or score_only request) cannot ask:
// a gap, holes, several answers, lengths.
Status RefuseGeneration(const v1::GenerateRequest& r, const std::string& what) {
  if (!r.suffix().empty()) return InvalidFieldError("suffix", what + " has no gap to fill");
  if (!r.template_text().empty()) return InvalidFieldError("template_text", what + " has no holes to fill");
  if (r.n() > 1) return InvalidFieldError("n", what + " has one answer, got " + std::to_string(r.n()));
  for (const auto& [set, field] : {std::pair{r.params().has_gen_length(), "params.gen_length"},
                                   std::pair{r.params().has_block_length(), "params.block_length"},
                                   std::pair{r.params().has_steps(), "params.steps"}}) {
    if (set) return InvalidFieldError(field, what + " generates nothing: leave it unset");
  }
  return OkStatus();
}

}  // namespace

Status ValidateLikelihoodRequest(const v1::GenerateRequest& r) {
  if (!r.params().has_likelihood()) {
    if (!r.continuation().empty()) return InvalidFieldError("continuation", "is the text of a likelihood request: set params.likelihood");
    return OkStatus();
  }
  if (r.continuation().size() > kMaxPromptBytes)
    return InvalidFieldError("continuation", "must be at most " + std::to_string(kMaxPromptBytes) + " bytes, got " +
                                   std::to_string(r.continuation().size()));
  const v1::Likelihood& l = r.params().likelihood();
  switch (r.prompt_case()) {
    case v1::GenerateRequest::kText:
      if (r.continuation().empty())
        return InvalidFieldError("continuation", "must hold the text whose likelihood given the prompt is estimated");
      if (l.continuation_tokens() != 0)
        return InvalidFieldError("params.likelihood.continuation_tokens",
                   "is counted from continuation with a text prompt: leave it unset, got " +
                       std::to_string(l.continuation_tokens()));
      break;
    case v1::GenerateRequest::kIds:
      if (!r.continuation().empty())
        return InvalidFieldError("continuation", "goes with a text prompt: with ids give params.likelihood.continuation_tokens");
      break;
    default:
      return InvalidFieldError("params.likelihood", "takes a text or ids prompt (context then continuation), not a chat");
  }
  return RefuseGeneration(r, "a likelihood request");
}

Status ValidateGenerateRequest(const v1::GenerateRequest& r) {
  if (r.model().empty()) return Bad("model", "must name a model", "an empty string");
  if (r.model().size() > 256) return Bad("model", "must be at most 256 characters", std::to_string(r.model().size()));
  UNMASK_RETURN_IF_ERROR(ValidatePrompt(r));
  // The rules of every door. A template without gen_length has its length (and the steps and
  // blocks that depend on it) only once encoded: Prepare checks its parameters then.
  UNMASK_RETURN_IF_ERROR(ValidateLikelihoodRequest(r));
  if (r.params().score_only()) UNMASK_RETURN_IF_ERROR(RefuseGeneration(r, "a score_only request"));
  v1::GenerationParams params = r.params();
  if (params.has_likelihood() && r.prompt_case() == v1::GenerateRequest::kText)
    params.mutable_likelihood()->set_continuation_tokens(1);  // counted from `continuation` once encoded
  if (r.template_text().empty() || params.has_gen_length())
    UNMASK_RETURN_IF_ERROR(generation::CheckParamsProto(params));
  if (r.priority() < kMinPriority || r.priority() > kMaxPriority)
    return Bad("priority", "must be in [" + std::to_string(kMinPriority) + ", " + std::to_string(kMaxPriority) + "]",
               std::to_string(r.priority()));
  if (!std::isfinite(r.deadline_seconds()) || r.deadline_seconds() < 0 || r.deadline_seconds() > kMaxDeadlineSeconds)
    return Bad("deadline_seconds", "must be in [0, " + Num(kMaxDeadlineSeconds) + "] (0 = none)", Num(r.deadline_seconds()));
  if (r.idempotency_key().size() > kMaxIdempotencyKey)
    return Bad("idempotency_key", "must be at most " + std::to_string(kMaxIdempotencyKey) + " characters",
               std::to_string(r.idempotency_key().size()));
  if (r.suffix().size() > kMaxPromptBytes)
    return Bad("suffix", "must be at most " + std::to_string(kMaxPromptBytes) + " bytes", std::to_string(r.suffix().size()));
  if (r.template_text().size() > kMaxPromptBytes)
    return Bad("template_text", "must be at most " + std::to_string(kMaxPromptBytes) + " bytes",
               std::to_string(r.template_text().size()));
  if (r.n() < 0 || r.n() > kMaxChoices)
    return Bad("n", "must be in [0, " + std::to_string(kMaxChoices) + "] (0 = 1)", std::to_string(r.n()));
  for (char c : r.idempotency_key()) {
    if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e)
      return Bad("idempotency_key", "must be printable ASCII without spaces", "a key with other characters");
  }
  return OkStatus();
}

}  // namespace unmask::scheduler
