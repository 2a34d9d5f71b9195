#include "services/scheduler/request_validation.h"

#include <cmath>

#include "common/sampler/sampler_mode.h"

namespace unmask::scheduler {
namespace {

Status Bad(const std::string& field, const std::string& rule, const std::string& got) {
  return InvalidArgumentError(field + ": " + rule + ", got " + got);
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
  return InvalidArgumentError("prompt: set one of text, chat or ids");
}

Status ValidateParams(const v1::GenerationParams& p) {
  if (p.has_gen_length() && (p.gen_length() < 1 || p.gen_length() > kMaxGenLength))
    return Bad("params.gen_length", "must be in [1, " + std::to_string(kMaxGenLength) + "]", std::to_string(p.gen_length()));
  if (p.has_block_length() && p.block_length() < 1)
    return Bad("params.block_length", "must be >= 1", std::to_string(p.block_length()));
  if (p.has_steps() && p.steps() < 1) return Bad("params.steps", "must be >= 1", std::to_string(p.steps()));
  if (!std::isfinite(p.temperature()) || p.temperature() < 0 || p.temperature() > 100)
    return Bad("params.temperature", "must be in [0, 100]", Num(p.temperature()));
  if (!std::isfinite(p.cfg_scale()) || p.cfg_scale() < 0 || p.cfg_scale() > 100)
    return Bad("params.cfg_scale", "must be in [0, 100]", Num(p.cfg_scale()));
  if (!v1::Remasking_IsValid(p.remasking()))
    return Bad("params.remasking", "must be REMASKING_LOW_CONFIDENCE or REMASKING_RANDOM", std::to_string(p.remasking()));
  if (!p.sampler().empty()) {
    auto mode = sampler::ParseSamplerMode(p.sampler());
    if (!mode.ok()) return mode.status().WithContext("params.sampler");
  }
  if (!std::isfinite(p.threshold()) || p.threshold() < 0 || p.threshold() > 1)
    return Bad("params.threshold", "must be in [0, 1] (0 = the default 0.9)", Num(p.threshold()));
  if (!std::isfinite(p.factor()) || p.factor() < 0)
    return Bad("params.factor", "must be >= 0 (0 = the default)", Num(p.factor()));
  if (p.attention_query_chunk() < 0 || p.attention_query_chunk() > kMaxAttentionQueryChunk)
    return Bad("params.attention_query_chunk", "must be in [0, " + std::to_string(kMaxAttentionQueryChunk) + "] (0 = the executor's default)",
               std::to_string(p.attention_query_chunk()));
  return OkStatus();
}

}  // namespace

Status ValidateGenerateRequest(const v1::GenerateRequest& r) {
  if (r.model().empty()) return Bad("model", "must name a model", "an empty string");
  if (r.model().size() > 256) return Bad("model", "must be at most 256 characters", std::to_string(r.model().size()));
  UNMASK_RETURN_IF_ERROR(ValidatePrompt(r));
  UNMASK_RETURN_IF_ERROR(ValidateParams(r.params()));
  if (r.priority() < kMinPriority || r.priority() > kMaxPriority)
    return Bad("priority", "must be in [" + std::to_string(kMinPriority) + ", " + std::to_string(kMaxPriority) + "]",
               std::to_string(r.priority()));
  if (!std::isfinite(r.deadline_seconds()) || r.deadline_seconds() < 0 || r.deadline_seconds() > kMaxDeadlineSeconds)
    return Bad("deadline_seconds", "must be in [0, " + Num(kMaxDeadlineSeconds) + "] (0 = none)", Num(r.deadline_seconds()));
  if (r.idempotency_key().size() > kMaxIdempotencyKey)
    return Bad("idempotency_key", "must be at most " + std::to_string(kMaxIdempotencyKey) + " characters",
               std::to_string(r.idempotency_key().size()));
  for (char c : r.idempotency_key()) {
    if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e)
      return Bad("idempotency_key", "must be printable ASCII without spaces", "a key with other characters");
  }
  return OkStatus();
}

}  // namespace unmask::scheduler
