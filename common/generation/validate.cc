#include "common/generation/validate.h"

#include <cmath>
#include <sstream>

namespace unmask::generation {
namespace {

std::string Num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string Int(std::int64_t v) { return std::to_string(v); }

Status CheckRange(const char* field, double v, double lo, double hi, const std::string& note = "") {
  if (std::isfinite(v) && v >= lo && v <= hi) return OkStatus();
  return InvalidFieldError(field, "must be in [" + Num(lo) + ", " + Num(hi) + "]" + note + ", got " + Num(v));
}

Status ValidateLengths(const GenerationParams& p) {
  if (p.gen_length < 1 || p.gen_length > kMaxGenLength)
    return InvalidFieldError("gen_length", "must be in [1, " + Int(kMaxGenLength) + "], got " + Int(p.gen_length));
  if (p.block_length < 1) return InvalidFieldError("block_length", "must be >= 1, got " + Int(p.block_length));
  if (p.steps < 1) return InvalidFieldError("steps", "must be >= 1, got " + Int(p.steps));
  if (p.gen_length % p.block_length != 0)
    return InvalidFieldError("block_length", "must divide gen_length (" + Int(p.gen_length) + "), got " +
                                                 Int(p.block_length));
  const std::int64_t num_blocks = p.gen_length / p.block_length;
  if (p.steps % num_blocks != 0)
    return InvalidFieldError("steps", "must be a multiple of the number of blocks (gen_length / block_length = " +
                                          Int(num_blocks) + "), got " + Int(p.steps));
  if (p.steps > p.gen_length)
    return InvalidFieldError("steps", "must be <= gen_length (" + Int(p.gen_length) + "), got " + Int(p.steps));
  return OkStatus();
}

}  // namespace

Status ValidateFields(const GenerationParams& p) {
  UNMASK_RETURN_IF_ERROR(ValidateLengths(p));
  UNMASK_RETURN_IF_ERROR(CheckRange("temperature", p.temperature, 0, kMaxTemperature, " (0 = greedy)"));
  UNMASK_RETURN_IF_ERROR(CheckRange("cfg_scale", p.cfg_scale, 0, kMaxCfgScale, " (0 = off)"));
  UNMASK_RETURN_IF_ERROR(CheckRange("threshold", p.threshold, 0, 1));
  if (!std::isfinite(p.factor) || p.factor <= 0 || p.factor > kMaxFactor)
    return InvalidFieldError("factor", "must be in (0, " + Num(kMaxFactor) + "], got " + Num(p.factor));
  if (p.attention_query_chunk < 0 || p.attention_query_chunk > kMaxAttentionQueryChunk)
    return InvalidFieldError("attention_query_chunk", "must be in [0, " + Int(kMaxAttentionQueryChunk) +
                                                          "] (0 = the executor's default), got " +
                                                          Int(p.attention_query_chunk));
  return OkStatus();
}

Status ValidateParams(const GenerationParams& p, const checkpoint::LladaConfig& config, std::int64_t prompt_length) {
  UNMASK_RETURN_IF_ERROR(ValidateFields(p));
  auto in_vocab = [&](const char* name, std::int64_t id) -> Status {
    if (id >= 0 && id < config.embedding_size) return OkStatus();
    return InvalidFieldError(name, "must be in the model's vocabulary [0, " + Int(config.embedding_size) + "), got " +
                                       Int(id));
  };
  UNMASK_RETURN_IF_ERROR(in_vocab("mask_id", p.mask_id));
  if (p.logits_eos_inf || p.confidence_eos_eot_inf) UNMASK_RETURN_IF_ERROR(in_vocab("eos_id", p.eos_id));
  if (p.confidence_eos_eot_inf) UNMASK_RETURN_IF_ERROR(in_vocab("eot_id", p.eot_id));
  if (prompt_length + p.gen_length > config.max_sequence_length)
    return InvalidFieldError("gen_length", "prompt length + gen_length (" + Int(prompt_length) + " + " +
                                               Int(p.gen_length) + ") exceeds the model's max_sequence_length (" +
                                               Int(config.max_sequence_length) + ")");
  return OkStatus();
}

Status ValidateFastOptions(const FastOptions& o) {
  if (!std::isfinite(o.threshold) || o.threshold < 0)
    return InvalidFieldError("threshold", "must be a finite number >= 0, got " + Num(o.threshold));
  if (!std::isfinite(o.factor) || o.factor <= 0)
    return InvalidFieldError("factor", "must be a finite number > 0, got " + Num(o.factor));
  return OkStatus();
}

}  // namespace unmask::generation
