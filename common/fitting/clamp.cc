#include "common/fitting/clamp.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>

#include "common/generation/validate.h"
#include "common/fitting/clamp_levers.h"

namespace unmask::fitting {
namespace {

std::string Str(std::int64_t v) { return std::to_string(v); }
std::string Bytes(std::uint64_t b) { return HumanBytes(b) + " (" + std::to_string(b) + " bytes)"; }

// The request's own fields (generation::ValidateFields) and what the clamp adds: the batch, the
// prompt, the compute type, and room for at least one token below max_sequence_length.
Status ValidateAsked(const checkpoint::LladaConfig& config, const GenerationRequest& r) {
  UNMASK_RETURN_IF_ERROR(generation::ValidateFields(r.params));
  if (r.batch < 1) return InvalidFieldError("batch", "must be >= 1, got " + Str(r.batch));
  if (r.prompt_length < 0) return InvalidFieldError("prompt_length", "must be >= 0, got " + Str(r.prompt_length));
  if (r.compute_dtype_bytes != 2 && r.compute_dtype_bytes != 4)
    return InvalidFieldError("compute_dtype_bytes",
                             "must be 2 (bf16, fp16) or 4 (fp32), got " + std::to_string(r.compute_dtype_bytes));
  if (r.prompt_length >= config.max_sequence_length)
    return InvalidFieldError("prompt_length", "the prompt (" + Str(r.prompt_length) +
                                                  " tokens) leaves no room to generate below the model's "
                                                  "max_sequence_length (" + Str(config.max_sequence_length) + ")");
  return OkStatus();
}

}  // namespace

StatusOr<ClampPolicy> ParseClampPolicy(const std::string& text) {
  std::string t;
  for (char ch : text) t += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (t == "off") return ClampPolicy::kOff;
  if (t == "standard") return ClampPolicy::kStandard;
  if (t == "extreme") return ClampPolicy::kExtreme;
  return InvalidArgumentError("clamp policy '" + text + "' is not one of off, standard, extreme");
}

const char* ClampPolicyName(ClampPolicy policy) {
  switch (policy) {
    case ClampPolicy::kOff: return "off";
    case ClampPolicy::kStandard: return "standard";
    case ClampPolicy::kExtreme: return "extreme";
  }
  return "off";
}

RequestShape ShapeOf(const GenerationRequest& r) {
  const SamplerKind kind = SamplerKindOf(r.params.sampler);
  RequestShape s;
  s.batch = r.batch;
  s.prompt_length = r.prompt_length;
  s.gen_length = r.params.gen_length;
  s.block_length = r.params.block_length;
  s.steps = r.params.steps;
  s.compute_dtype_bytes = r.compute_dtype_bytes;
  s.sampler = kind;
  s.temperature = r.params.temperature;
  s.cfg_scale = r.params.cfg_scale;
  s.attention_query_chunk = r.params.attention_query_chunk;
  s.logprobs = r.params.logprobs >= 0;
  generation::CacheKind cache;
  generation::DecodeRule rule;
  s.float64_confidence = generation::FastModeOf(r.params.sampler, &cache, &rule) &&
                         (cache != generation::CacheKind::kNone || rule != generation::DecodeRule::kSchedule);
  s.nucleus = r.params.top_p < 1 || r.params.top_k > 0;
  s.max_prob_confidence = r.params.sampler == generation::SamplerMode::kDreamPrefixCacheThreshold ||
                          r.params.sampler == generation::SamplerMode::kDreamDualCacheThreshold ||
                          r.params.sampler == generation::SamplerMode::kDreamFastdllmThreshold ||
                          r.params.alg == generation::DreamAlg::kOrigin ||
                          r.params.alg == generation::DreamAlg::kMaskgitPlus;
  if (r.params.likelihood) {
    // A likelihood job (common/sampler/likelihood.h) runs forwards of one row of the sequence
    // (its one generated position included; two with guidance) and takes the head, guidance and a
    // float32 log-softmax over the masked positions, at most the continuation's tokens (the
    // greedy check: the same rows, a float32 softmax). Measured by bench_memory.
    // rows_per_forward samples a forward: a batch of that many sequences.
    s.sampler = SamplerKind::kReference;
    s.temperature = 0;
    s.batch = r.batch * std::max<std::int32_t>(1, r.params.likelihood->rows_per_forward);
    s.logits_rows = r.params.likelihood->continuation_tokens;
    s.logprobs = true;
    s.float64_confidence = false;
  }
  return s;
}

// The refusal of a request that does not fit at gen_length `floor` with every lever pulled.
Status NotEvenAtTheMinimum(const Clamper& c, const GenerationRequest& r, std::int64_t floor, std::uint64_t budget_bytes,
                           std::uint64_t weights_bytes, ClampPolicy policy) {
  GenerationRequest least = r;
  least.params.gen_length = floor;
  least.params.block_length = 1;  // the fewest logits rows; the reference does not depend on it
  const MemoryEstimate e = c.Estimate(least);
  std::string msg = "the request does not fit even at its minimum (gen_length " + Str(floor) + ", sampler " +
                    generation::SamplerModeName(least.params.sampler) + ", batch " + Str(least.batch) + ", prompt " +
                    Str(least.prompt_length) + " tokens): needs " + Bytes(e.total()) + " (weights " +
                    HumanBytes(e.weights) + " + peak " + HumanBytes(e.peak) + " in phase " + e.peak_phase +
                    "), available " + Bytes(budget_bytes) + " (clamp policy " + ClampPolicyName(policy) + ")";
  if (weights_bytes >= budget_bytes)
    msg += "; the weights alone (" + HumanBytes(weights_bytes) +
           ") exceed the budget: load the model at a smaller precision (int8, int4) or use a larger device";
  return ResourceExhaustedError(msg).WithReason(
      "DOES_NOT_FIT", {{"needed_bytes", std::to_string(e.total())}, {"budget_bytes", std::to_string(budget_bytes)}});
}

namespace {

// Whether gen / block lengths fit the model's max_sequence_length (LLaDA2 pads the canvas to
// whole blocks counted from position 0: the padding must fit).
bool WithinModel(const checkpoint::LladaConfig& config, const GenerationRequest& asked, std::int64_t gen,
                 std::int64_t block) {
  GenerationRequest t = asked;
  t.params.gen_length = gen;
  t.params.block_length = block;
  return generation::SequenceLength(t.params, asked.prompt_length) <= config.max_sequence_length;
}

// ChooseLengths for `p`'s sampler: dream and the uncached Fast-dLLM Dream modes have no blocks
// (block_length = gen_length), so the largest gen_length that fits.
std::optional<Lengths> ChooseFor(const generation::GenerationParams& p, std::int64_t max_gen, std::int64_t floor,
                                 const std::function<bool(std::int64_t, std::int64_t)>& fits) {
  if (!generation::HasNoBlocks(p.sampler)) return ChooseLengths(max_gen, p.block_length, floor, fits);
  std::optional<Lengths> l = ChooseLengths(max_gen, 1, floor, [&](std::int64_t gen, std::int64_t) { return fits(gen, gen); });
  if (l) l->block = l->gen;
  return l;
}

// A request longer than the model: cut to fit (or refused under clamp policy off).
Status FitTheModelsLength(const checkpoint::LladaConfig& config, const GenerationRequest& asked, ClampPolicy policy,
                          Clamper& c) {
  if (WithinModel(config, asked, asked.params.gen_length, asked.params.block_length)) return OkStatus();
  const bool llada2 = generation::IsBlockDiffusion(asked.params.sampler);
  const std::string why = "prompt (" + Str(asked.prompt_length) + " tokens) + gen_length (" + Str(asked.params.gen_length) +
                          (llada2 ? ") padded to whole blocks of " + Str(asked.params.block_length) : ")") +
                          " exceeds the model's max_sequence_length (" + Str(config.max_sequence_length) + ")";
  if (policy == ClampPolicy::kOff)
    return InvalidArgumentError(why + "; clamp policy off changes nothing").WithField("gen_length");
  // LLaDA2 keeps its block when a whole one fits after the prompt (its blocks need not divide
  // gen_length). Otherwise gen 1 in blocks of 1 always fits (ValidateAsked: the prompt is shorter
  // than the model's length).
  const std::int64_t block = asked.params.block_length;
  const std::int64_t whole_blocks_room = config.max_sequence_length / block * block - asked.prompt_length;
  const auto within = [&](std::int64_t g, std::int64_t b) { return WithinModel(config, asked, g, b); };
  const Lengths l = llada2 && whole_blocks_room >= 1
                        ? Lengths{std::min(asked.params.gen_length, whole_blocks_room), block}
                        : *ChooseFor(asked.params, config.max_sequence_length - asked.prompt_length, 1, within);
  c.SetLengths(l, why,
               llada2 ? "the prompt and gen_length (" + Str(l.gen) + ") padded to whole blocks must fit the model"
                      : "block_length must divide gen_length (" + Str(l.gen) + ")");
  return OkStatus();
}

// A likelihood job's samples a forward (GenerationParams::likelihood->rows_per_forward): 0 asks
// for as many as batch_size and the memory allow, so the most that fit, halving from batch_size,
// one at least (whatever the policy: nothing asked changes). An explicit count is kept under
// policy off and otherwise halved until it fits, said as an adjustment.
void FitLikelihoodRows(Clamper& c, ClampPolicy policy) {
  GenerationRequest& r = c.request();
  if (!r.params.likelihood) return;
  generation::LikelihoodParams& l = *r.params.likelihood;
  const bool chosen = l.rows_per_forward == 0;
  if (!chosen && policy == ClampPolicy::kOff) return;
  const std::int32_t asked = chosen ? l.batch_size : l.rows_per_forward;
  l.rows_per_forward = asked;
  const std::string needs = c.Needs(r);
  while (l.rows_per_forward > 1 && !c.Fits()) l.rows_per_forward = (l.rows_per_forward + 1) / 2;
  if (!chosen && l.rows_per_forward < asked)
    c.Record("likelihood.rows_per_forward", Str(asked), Str(l.rows_per_forward),
             "the request " + needs + "; " + Str(l.rows_per_forward) + " samples a forward fit");
}

}  // namespace

StatusOr<ClampResult> Clamp(const checkpoint::LladaConfig& config, const GenerationRequest& asked,
                            std::uint64_t budget_bytes, std::uint64_t weights_bytes, ClampPolicy policy,
                            const ClampOptions& options) {
  UNMASK_RETURN_IF_ERROR(ValidateAsked(config, asked));
  Clamper c(config, budget_bytes, weights_bytes, asked);
  GenerationRequest& r = c.request();

  UNMASK_RETURN_IF_ERROR(FitTheModelsLength(config, asked, policy, c));
  FitLikelihoodRows(c, policy);

  ClampResult result;
  result.budget_bytes = budget_bytes;
  if (policy == ClampPolicy::kOff) {
    result.applied = r;
    result.estimate = c.Estimate(r);
    result.fits = result.estimate.total() <= budget_bytes;
    if (!result.fits)
      result.adjustments.push_back({"memory", HumanBytes(result.estimate.total()), HumanBytes(result.estimate.total()),
                                    "the request " + c.Needs(r) + "; clamp policy off leaves it as asked"});
    return result;
  }

  if (!c.Fits()) {
    const std::string needs = c.Needs(r);
    const bool extreme = policy == ClampPolicy::kExtreme;
    if (extreme) {
      // The free lever (chunking) before and after each of those that trade quality.
      ChunkLever(c);
      SamplerLever(c);
      ChunkLever(c);
      NoiseAndGuidanceLevers(c);
      ChunkLever(c);
    }
    if (!c.Fits()) {
      const std::int64_t floor = std::min(r.params.gen_length, std::max<std::int64_t>(1, options.min_gen_length));
      const auto fits = [&](std::int64_t gen, std::int64_t block) {
        GenerationRequest t = r;
        t.params.gen_length = gen;
        t.params.block_length = block;
        return WithinModel(config, asked, gen, block) && c.Fits(t);
      };
      std::optional<Lengths> l = ChooseFor(r.params, r.params.gen_length, floor, fits);
      if (!l && extreme) {
        AllLevers(c);
        l = ChooseFor(r.params, r.params.gen_length, floor, fits);
      }
      if (!l) return NotEvenAtTheMinimum(c, r, floor, budget_bytes, weights_bytes, policy);
      const std::string why_gen = "the request " + needs + "; " + Str(l->gen) + " is the largest gen_length" +
                                  (l->block == r.params.block_length ? " (a multiple of block_length " + Str(l->block) + ")" : "") +
                                  " that fits";
      const std::string why_block = "not even one block of " + Str(r.params.block_length) + " fits; " + Str(l->block) +
                                    " is the largest block_length dividing gen_length " + Str(l->gen) + " that fits";
      c.SetLengths(*l, why_gen, why_block);
    }
    if (extreme) Relax(c);
  }
  c.FinishSteps();
  result.applied = r;
  result.adjustments = c.adjustments();
  result.estimate = c.Estimate(r);
  return result;
}

}  // namespace unmask::fitting
