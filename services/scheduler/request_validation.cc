#include "services/scheduler/request_validation.h"

#include <cmath>

#include "common/generation/params_proto.h"

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
      for (int i = 0; i < m.size(); ++i) {
        const std::string field = "chat.messages[" + std::to_string(i) + "].role";
        const auto& role = m[i].role();
        if (role != "system" && role != "user" && role != "assistant")
          return Bad(field, "must be system, user or assistant", "'" + role + "'");
        if (role == "system" && i != 0) return Bad(field, "system is allowed only as the first message", "system");
      }
      if (m[m.size() - 1].role() != "user")
        return Bad("chat.messages", "must end with a user message", "'" + m[m.size() - 1].role() + "'");
      return OkStatus();
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

}  // namespace

Status ValidateGenerateRequest(const v1::GenerateRequest& r) {
  if (r.model().empty()) return Bad("model", "must name a model", "an empty string");
  if (r.model().size() > 256) return Bad("model", "must be at most 256 characters", std::to_string(r.model().size()));
  UNMASK_RETURN_IF_ERROR(ValidatePrompt(r));
  // The rules of every door. A template without gen_length has its length (and the steps and
  // blocks that depend on it) only once encoded: Prepare checks its parameters then.
  if (r.template_text().empty() || r.params().has_gen_length())
    UNMASK_RETURN_IF_ERROR(generation::CheckParamsProto(r.params()));
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
