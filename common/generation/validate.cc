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
  if (HasNoBlocks(p.sampler)) {
    // Dream's diffusion_generate and Fast-dLLM's uncached Dream sampler have no blocks; any number
    // of steps runs (a step may commit none).
    if (p.block_length != p.gen_length)
      return InvalidFieldError("block_length", std::string("sampler '") + SamplerModeName(p.sampler) +
                                                   "' has no blocks: leave it out or give gen_length (" +
                                                   Int(p.gen_length) + "), got " + Int(p.block_length));
    if (p.steps > kMaxGenLength)
      return InvalidFieldError("steps", "must be <= " + Int(kMaxGenLength) + ", got " + Int(p.steps));
    return OkStatus();
  }
  if (IsBlockDiffusion(p.sampler)) {
    // LLaDA2's blocks are counted from position 0 and `steps` is per block: no divisibility.
    if (p.block_length > kMaxGenLength)
      return InvalidFieldError("block_length", "must be <= " + Int(kMaxGenLength) + ", got " + Int(p.block_length));
    if (p.steps > kMaxGenLength)
      return InvalidFieldError("steps", "must be <= " + Int(kMaxGenLength) + " (" + SamplerModeName(p.sampler) +
                                            ": steps per block), got " + Int(p.steps));
    return OkStatus();
  }
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

// LLaDA2.1's token-editing options.
Status ValidateEditingFields(const GenerationParams& p) {
  UNMASK_RETURN_IF_ERROR(CheckRange("editing_threshold", p.editing_threshold, 0, 1));
  if (p.max_post_steps < 0 || p.max_post_steps > kMaxPostSteps)
    return InvalidFieldError("max_post_steps", "must be in [0, " + Int(kMaxPostSteps) + "], got " + Int(p.max_post_steps));
  if (p.num_to_transfer < 1 || p.num_to_transfer > p.block_length)
    return InvalidFieldError("num_to_transfer", "must be in [1, block_length (" + Int(p.block_length) + ")], got " +
                                                    Int(p.num_to_transfer));
  return OkStatus();
}

// Which option of `p` is set away from its default and belongs to other modes: llada21's editing
// options outside llada21, the block-diffusion options outside both block-diffusion modes.
Status RefuseOthersFields(const GenerationParams& p) {
  const GenerationParams d;
  const char* editing = p.editing_threshold != d.editing_threshold ? "editing_threshold"
                        : p.max_post_steps != d.max_post_steps     ? "max_post_steps"
                        : p.num_to_transfer != d.num_to_transfer   ? "num_to_transfer"
                                                                   : nullptr;
  if (editing != nullptr && p.sampler != SamplerMode::kLlada21)
    return InvalidFieldError(editing, std::string("only sampler 'llada21' (LLaDA2.1's token editing) uses it; "
                                                  "sampler '") +
                                          SamplerModeName(p.sampler) + "' has no such option");
  const bool dream = IsDreamFamily(p.sampler);
  const char* dream_field = p.alg != d.alg ? "alg" : p.alg_temp != d.alg_temp ? "alg_temp" : p.eps != d.eps ? "eps" : nullptr;
  if (dream_field != nullptr && !dream)
    return InvalidFieldError(dream_field, std::string("only the Dream samplers (dream and Fast-dLLM's dream_* modes) "
                                                      "use it; sampler '") +
                                              SamplerModeName(p.sampler) + "' has no such option");
  if (IsBlockDiffusion(p.sampler)) return OkStatus();
  const char* field = p.minimal_topk != d.minimal_topk ? "minimal_topk"
                      : p.eos_early_stop               ? "eos_early_stop"
                      : dream                          ? nullptr
                      : p.top_k != d.top_k             ? "top_k"
                      : p.top_p != d.top_p             ? "top_p"
                                                       : nullptr;
  if (field == nullptr) return OkStatus();
  const bool sampling = std::string(field) == "top_k" || std::string(field) == "top_p";
  const std::string users = sampling ? "samplers 'llada2', 'llada21' (LLaDA2's block diffusion) and "
                                       "'dream'"
                                     : "samplers 'llada2' and 'llada21' (LLaDA2's block diffusion)";
  return InvalidFieldError(field, "only " + users + " use it; sampler '" + SamplerModeName(p.sampler) +
                                      "' has no such option");
}

// top_k and top_p (LLaDA2's and Dream's samplers).
Status ValidateSamplingFilters(const GenerationParams& p) {
  if (p.top_k < 0) return InvalidFieldError("top_k", "must be >= 0 (0 = off), got " + Int(p.top_k));
  if (!(p.top_p > 0 && p.top_p <= 1)) return InvalidFieldError("top_p", "must be in (0, 1] (1 = off), got " + Num(p.top_p));
  return OkStatus();
}

// The LLaDA switches a sampler of another family does not have: the first one set, and why.
struct ForeignSwitch {
  const char* field = nullptr;  // null: none set
  const char* why = nullptr;
};
ForeignSwitch ForeignLladaSwitch(const GenerationParams& p) {
  if (p.cfg_scale != 0) return {"cfg_scale", "has no classifier-free guidance (0 = off)"};
  if (p.remasking != Remasking::kLowConfidence)
    return {"remasking", "commits the most confident tokens (low_confidence) only"};
  if (p.logits_eos_inf) return {"logits_eos_inf", "has no such switch"};
  if (p.confidence_eos_eot_inf) return {"confidence_eos_eot_inf", "has no such switch"};
  return {};
}

// Dream's options, and the LLaDA switches its diffusion_generate does not have.
Status ValidateDreamFields(const GenerationParams& p) {
  UNMASK_RETURN_IF_ERROR(ValidateSamplingFilters(p));
  UNMASK_RETURN_IF_ERROR(CheckRange("alg_temp", p.alg_temp, 0, kMaxTemperature, " (0 = the most confident)"));
  if (!(p.eps > 0 && p.eps < 1)) return InvalidFieldError("eps", "must be in (0, 1), got " + Num(p.eps));
  CacheKind cache;
  DecodeRule rule;
  if (DreamCacheModeOf(p.sampler, &cache, &rule) && rule == DecodeRule::kSchedule && p.alg == DreamAlg::kOrigin)
    return InvalidFieldError("alg", std::string("sampler '") + SamplerModeName(p.sampler) +
                                        "' takes maskgit_plus, topk_margin or entropy (Fast-dLLM's Dream sampler has "
                                        "no origin)");
  if (const ForeignSwitch f = ForeignLladaSwitch(p); f.field != nullptr)
    return InvalidFieldError(f.field, std::string("sampler '") + SamplerModeName(p.sampler) + "' " + f.why);
  return OkStatus();
}

// The block-diffusion options, and the LLaDA switches LLaDA2's generate() does not have.
Status ValidateBlockDiffusionFields(const GenerationParams& p) {
  if (p.minimal_topk < 1 || p.minimal_topk > p.gen_length)
    return InvalidFieldError("minimal_topk", "must be in [1, gen_length (" + Int(p.gen_length) + ")], got " +
                                                 Int(p.minimal_topk));
  UNMASK_RETURN_IF_ERROR(ValidateSamplingFilters(p));
  if (p.sampler == SamplerMode::kLlada21) UNMASK_RETURN_IF_ERROR(ValidateEditingFields(p));
  auto [field, why] = ForeignLladaSwitch(p);
  if (field == nullptr && !p.early_stop) {
    field = "early_stop", why = "always ends after the block that holds an EOS (no later block changes the answer; "
                                "eos_early_stop may end sooner)";
  }
  if (field != nullptr) return InvalidFieldError(field, std::string("sampler '") + SamplerModeName(p.sampler) + "' " + why);
  return OkStatus();
}

Status ValidateLikelihoodFields(const GenerationParams& p) {
  const LikelihoodParams& l = *p.likelihood;
  if (l.continuation_tokens < 1)
    return InvalidFieldError("likelihood.continuation_tokens",
                             "must be >= 1 (the prompt's last tokens scored), got " + Int(l.continuation_tokens));
  if (l.mc_num < 1 || l.mc_num > kMaxMcNum)
    return InvalidFieldError("likelihood.mc_num", "must be in [1, " + Int(kMaxMcNum) + "], got " + Int(l.mc_num));
  if (l.batch_size < 1 || l.batch_size > l.mc_num || l.mc_num % l.batch_size != 0)
    return InvalidFieldError("likelihood.batch_size", "must divide mc_num (" + Int(l.mc_num) + "), got " +
                                                          Int(l.batch_size));
  if (l.rows_per_forward < 0 || l.rows_per_forward > l.batch_size)
    return InvalidFieldError("likelihood.rows_per_forward", "must be in [0, batch_size " + Int(l.batch_size) +
                                                                "] (0 = as many as fit), got " + Int(l.rows_per_forward));
  if (p.logprobs >= 0)
    return InvalidFieldError("logprobs", "a likelihood job generates nothing: ask for prompt_logprobs instead");
  return OkStatus();
}

}  // namespace

Status ValidateLikelihood(const LikelihoodParams& likelihood, const checkpoint::LladaConfig& config,
                          std::int64_t prompt_length, double cfg_scale) {
  if (config.architecture == checkpoint::Architecture::kLlada2Moe)
    return InvalidFieldError("likelihood", "LLaDA2 models have no official likelihood estimate (block-causal "
                                           "attention); ask for prompt_logprobs instead");
  if (likelihood.continuation_tokens > prompt_length)
    return InvalidFieldError("likelihood.continuation_tokens", "must be at most the prompt's " + Int(prompt_length) +
                                                                   " tokens, got " +
                                                                   Int(likelihood.continuation_tokens));
  if (config.shifted_prediction()) {
    if (likelihood.check_greedy)
      return InvalidFieldError("likelihood.check_greedy", "Dream's official evaluation has no greedy check");
    if (cfg_scale > 0) return InvalidFieldError("cfg_scale", "Dream's official likelihood runs without guidance");
  }
  return OkStatus();
}

Status ValidateSamplerForModel(SamplerMode mode, const checkpoint::LladaConfig& config) {
  const bool dream_model = config.architecture == checkpoint::Architecture::kDream;
  if (dream_model != IsDreamFamily(mode)) {
    return InvalidFieldError("sampler", dream_model ? std::string("the model is Dream (shifted prediction): it generates "
                                                                  "with sampler 'dream' or a Fast-dLLM Dream mode "
                                                                  "(dream_prefix_cache, dream_dual_cache, +threshold) "
                                                                  "only, got '") +
                                                          SamplerModeName(mode) + "'"
                                                    : std::string("sampler '") + SamplerModeName(mode) +
                                                          "' needs a Dream model; this model is " +
                                                          checkpoint::ArchitectureName(config.architecture));
  }
  const bool llada2_model = config.architecture == checkpoint::Architecture::kLlada2Moe;
  if (llada2_model && !IsBlockDiffusion(mode))
    return InvalidFieldError("sampler", std::string("the model is LLaDA2 (block-causal attention): it generates with "
                                                    "sampler 'llada2' or 'llada21' only, got '") +
                                            SamplerModeName(mode) + "'");
  if (!llada2_model && IsBlockDiffusion(mode))
    return InvalidFieldError("sampler", std::string("sampler '") + SamplerModeName(mode) +
                                            "' needs an LLaDA2 model (block-causal attention); this model is " +
                                            std::string(config.architecture == checkpoint::Architecture::kLladaMoe
                                                            ? "LLaDA-MoE"
                                                            : "LLaDA") +
                                            ": use reference or a fast mode");
  return OkStatus();
}

std::int64_t SequenceLength(const GenerationParams& p, std::int64_t prompt_length) {
  const std::int64_t tokens = prompt_length + p.gen_length;
  if (!IsBlockDiffusion(p.sampler) || p.block_length < 1) return tokens;
  return (tokens + p.block_length - 1) / p.block_length * p.block_length;
}

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
  if (p.logprobs < -1 || p.logprobs > kMaxLogprobs)
    return InvalidFieldError("logprobs", "must be in [0, " + Int(kMaxLogprobs) + "] (unset = none), got " +
                                             Int(p.logprobs));
  if (p.prompt_logprobs < -1 || p.prompt_logprobs > kMaxLogprobs)
    return InvalidFieldError("prompt_logprobs", "must be in [0, " + Int(kMaxLogprobs) + "] (unset = none), got " +
                                                    Int(p.prompt_logprobs));
  UNMASK_RETURN_IF_ERROR(RefuseOthersFields(p));
  if (p.likelihood) UNMASK_RETURN_IF_ERROR(ValidateLikelihoodFields(p));
  if (p.score_only && p.prompt_logprobs < 0)
    return InvalidFieldError("score_only", "scores the prompt: ask for prompt_logprobs too");
  if (p.score_only && p.logprobs >= 0)
    return InvalidFieldError("logprobs", "a score_only job generates nothing: ask for prompt_logprobs instead");
  if (IsDreamFamily(p.sampler)) return ValidateDreamFields(p);
  return IsBlockDiffusion(p.sampler) ? ValidateBlockDiffusionFields(p) : OkStatus();
}

Status ValidateParams(const GenerationParams& p, const checkpoint::LladaConfig& config, std::int64_t prompt_length) {
  UNMASK_RETURN_IF_ERROR(ValidateFields(p));
  auto in_vocab = [&](const char* name, std::int64_t id) -> Status {
    if (id >= 0 && id < config.embedding_size) return OkStatus();
    return InvalidFieldError(name, "must be in the model's vocabulary [0, " + Int(config.embedding_size) + "), got " +
                                       Int(id));
  };
  UNMASK_RETURN_IF_ERROR(in_vocab("mask_id", p.mask_id));
  if (p.likelihood) UNMASK_RETURN_IF_ERROR(ValidateLikelihood(*p.likelihood, config, prompt_length, p.cfg_scale));
  if (p.logits_eos_inf || p.confidence_eos_eot_inf) UNMASK_RETURN_IF_ERROR(in_vocab("eos_id", p.eos_id));
  if (p.confidence_eos_eot_inf) UNMASK_RETURN_IF_ERROR(in_vocab("eot_id", p.eot_id));
  if (SequenceLength(p, prompt_length) > config.max_sequence_length) {
    const bool padded = SequenceLength(p, prompt_length) != prompt_length + p.gen_length;
    return InvalidFieldError("gen_length", "prompt length + gen_length (" + Int(prompt_length) + " + " +
                                               Int(p.gen_length) + ")" +
                                               (padded ? ", padded to whole blocks of block_length (" +
                                                             Int(SequenceLength(p, prompt_length)) + ")," : "") +
                                               " exceeds the model's max_sequence_length (" +
                                               Int(config.max_sequence_length) + ")");
  }
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
