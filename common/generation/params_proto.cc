#include "common/generation/params_proto.h"

#include <optional>

#include "common/generation/field_names.h"
#include "common/generation/validate.h"

namespace unmask::generation {
namespace {

template <typename T>
std::optional<std::int64_t> Optional(bool has, T value) {
  return has ? std::optional<std::int64_t>(value) : std::nullopt;
}

}  // namespace

Status UnderField(const std::string& prefix, const Status& status) {
  return status.field().empty() ? status : RenameField(status, prefix + "." + status.field());
}

StatusOr<GenerationParams> ParamsFromProto(const v1::GenerationParams& in, SamplerMode default_sampler) {
  GenerationParams p;
  p.sampler = default_sampler;
  if (!in.sampler().empty()) {
    auto mode = ParseSamplerMode(in.sampler());
    if (!mode.ok()) return UnderField("params", mode.status());
    p.sampler = *mode;
  }
  ResolveLengths(Optional(in.has_gen_length(), in.gen_length()), Optional(in.has_block_length(), in.block_length()),
                 Optional(in.has_steps(), in.steps()), p);
  p.temperature = in.temperature();
  p.cfg_scale = in.cfg_scale();
  switch (in.remasking()) {
    case v1::REMASKING_UNSPECIFIED:
    case v1::REMASKING_LOW_CONFIDENCE: p.remasking = Remasking::kLowConfidence; break;
    case v1::REMASKING_RANDOM: p.remasking = Remasking::kRandom; break;
    default:
      return InvalidFieldError("params.remasking", "must be REMASKING_LOW_CONFIDENCE or REMASKING_RANDOM, got " +
                                                       std::to_string(in.remasking()));
  }
  p.logits_eos_inf = in.logits_eos_inf();
  p.confidence_eos_eot_inf = in.confidence_eos_eot_inf();
  p.seed = in.seed();
  ResolveThreshold(in.threshold() != 0 ? std::optional<double>(in.threshold()) : std::nullopt, p);
  if (in.factor() != 0) p.factor = in.factor();
  if (in.has_early_stop()) p.early_stop = in.early_stop();
  p.stop_at_eos = in.stop_at_eos();
  p.attention_query_chunk = in.attention_query_chunk();
  if (in.minimal_topk() != 0) p.minimal_topk = in.minimal_topk();
  p.top_k = in.top_k();
  if (in.top_p() != 0) p.top_p = in.top_p();
  p.eos_early_stop = in.eos_early_stop();
  if (in.has_editing_threshold()) p.editing_threshold = in.editing_threshold();
  if (in.has_max_post_steps()) p.max_post_steps = in.max_post_steps();
  if (in.num_to_transfer() != 0) p.num_to_transfer = in.num_to_transfer();
  if (!in.alg().empty()) {
    auto alg = ParseDreamAlg(in.alg());
    if (!alg.ok()) return UnderField("params", alg.status());
    p.alg = *alg;
  }
  p.alg_temp = in.alg_temp();
  if (in.has_eps()) p.eps = in.eps();
  if (in.has_logprobs() && in.logprobs() < 0)  // -1 means "none" inside; on the wire that is unset
    return InvalidFieldError("params.logprobs", "must be in [0, " + std::to_string(kMaxLogprobs) +
                                                    "] (unset = none), got " + std::to_string(in.logprobs()));
  if (in.has_logprobs()) p.logprobs = in.logprobs();
  if (in.has_prompt_logprobs() && in.prompt_logprobs() < 0)
    return InvalidFieldError("params.prompt_logprobs", "must be in [0, " + std::to_string(kMaxLogprobs) +
                                                           "] (unset = none), got " +
                                                           std::to_string(in.prompt_logprobs()));
  if (in.has_prompt_logprobs()) p.prompt_logprobs = in.prompt_logprobs();
  if (in.has_likelihood()) {
    LikelihoodParams l;
    l.continuation_tokens = in.likelihood().continuation_tokens();
    if (in.likelihood().mc_num() != 0) l.mc_num = in.likelihood().mc_num();
    if (in.likelihood().batch_size() != 0) l.batch_size = in.likelihood().batch_size();
    l.check_greedy = in.likelihood().check_greedy();
    l.rows_per_forward = in.likelihood().rows_per_forward();
    p.likelihood = l;
  }
  p.score_only = in.score_only();
  Status valid = ValidateFields(p);
  if (!valid.ok()) return UnderField("params", valid);
  return p;
}

Status CheckParamsProto(const v1::GenerationParams& in) {
  if (!in.sampler().empty()) return ParamsFromProto(in).status();
  auto as_reference = ParamsFromProto(in, SamplerMode::kReference);
  if (as_reference.ok()) return OkStatus();
  auto as_llada2 = ParamsFromProto(in, SamplerMode::kLlada2);
  if (as_llada2.ok()) return OkStatus();
  auto as_llada21 = ParamsFromProto(in, SamplerMode::kLlada21);
  if (as_llada21.ok()) return OkStatus();
  auto as_dream = ParamsFromProto(in, SamplerMode::kDream);
  if (as_dream.ok()) return OkStatus();
  // Wrong every way: a request that sets a block-diffusion mode's own options means that mode;
  // say what is wrong there.
  const bool means_llada21 = in.has_editing_threshold() || in.has_max_post_steps() || in.num_to_transfer() != 0;
  const bool means_llada2 = in.minimal_topk() != 0 || in.top_k() != 0 || (in.top_p() != 0 && in.top_p() != 1) ||
                            in.eos_early_stop();
  if (means_llada21) return as_llada21.status();
  if (!in.alg().empty() || in.alg_temp() != 0 || in.has_eps()) return as_dream.status();
  return means_llada2 ? as_llada2.status() : as_reference.status();
}

v1::GenerationParams ParamsToProto(const GenerationParams& p) {
  v1::GenerationParams out;
  out.set_gen_length(p.gen_length);
  out.set_block_length(p.block_length);
  out.set_steps(p.steps);
  out.set_temperature(p.temperature);
  out.set_cfg_scale(p.cfg_scale);
  out.set_remasking(p.remasking == Remasking::kRandom ? v1::REMASKING_RANDOM : v1::REMASKING_LOW_CONFIDENCE);
  out.set_logits_eos_inf(p.logits_eos_inf);
  out.set_confidence_eos_eot_inf(p.confidence_eos_eot_inf);
  out.set_seed(p.seed);
  out.set_sampler(SamplerModeName(p.sampler));
  out.set_threshold(p.threshold);
  out.set_factor(p.factor);
  out.set_early_stop(p.early_stop);
  out.set_stop_at_eos(p.stop_at_eos);
  out.set_attention_query_chunk(p.attention_query_chunk);
  out.set_minimal_topk(p.minimal_topk);
  out.set_top_k(p.top_k);
  out.set_top_p(p.top_p);
  out.set_eos_early_stop(p.eos_early_stop);
  out.set_editing_threshold(p.editing_threshold);
  out.set_max_post_steps(p.max_post_steps);
  out.set_num_to_transfer(p.num_to_transfer);
  out.set_alg(DreamAlgName(p.alg));
  out.set_alg_temp(p.alg_temp);
  out.set_eps(p.eps);
  if (p.logprobs >= 0) out.set_logprobs(p.logprobs);
  if (p.prompt_logprobs >= 0) out.set_prompt_logprobs(p.prompt_logprobs);
  out.set_score_only(p.score_only);
  if (p.likelihood) {
    v1::Likelihood* l = out.mutable_likelihood();
    l->set_continuation_tokens(p.likelihood->continuation_tokens);
    l->set_mc_num(p.likelihood->mc_num);
    l->set_batch_size(p.likelihood->batch_size);
    l->set_check_greedy(p.likelihood->check_greedy);
    l->set_rows_per_forward(p.likelihood->rows_per_forward);
  }
  return out;
}

}  // namespace unmask::generation
