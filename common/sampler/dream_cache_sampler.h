// Fast-dLLM's Dream sampler, as the official FastdLLMDreamSampler.sample computes it (dllm's
// dllm/pipelines/fastdllm/dream/sampler.py; tests/data/dream-golden.md, "tiny-dream.fastdllm"):
// Dream's shifted prediction (a masked position reads the logits of the position to its left,
// position 0 its own; DreamCacheOptions::right_shift_logits) with Fast-dLLM's schedules and caches.
// Tokens are sampled as Dream's sample_tokens does (dream_sampling.h): argmax at temperature 0,
// else temperature, top_p then top_k, one Categorical draw per sampled row, from the generator
// seeded with params.seed.
//
// No cache (CacheKind::kNone; block_length has no effect): every call runs the whole canvas.
//   schedule (threshold_rule off): dllm's get_num_transfer_tokens with the linear scheduler, per
//     row: step j of `steps` commits round_half_even(remaining * (1 - ratio_j)) (ratio_j in
//     float32), and steps that commit nothing are dropped, so there may be fewer calls than
//     `steps` (4 masks in 10 steps: 4 calls). Each call samples every masked position of the batch
//     with the alg's confidence (maskgit_plus, topk_margin, entropy), then per row commits its
//     count: the most confident (torch.topk's order), or with alg_temp > 0 drawn without
//     replacement from softmax(confidence / alg_temp) (one draw per row, in row order).
//   threshold_rule (Fast-dLLM's alg confidence_threshold; one prompt): calls until no mask is
//     left; call i takes the top masks - (the schedule's counts after i) by confidence (all of
//     them once the schedule is over), and keeps the first and every one with confidence >=
//     threshold: the threshold only lowers the schedule's count, leftovers roll over.
//   A left-padded batch runs with its padding masked out of attention; positions are 0..T-1 in
//   every row, pads included (Fast-dLLM's Dream model ignores position ids).
//
// Prefix / dual cache (CacheKind::kPrefix, kDual; equal-length prompts, dual one prompt): the
// generation is gen_length / block_length blocks, each of steps / num_blocks steps, with
// timesteps = linspace(1, eps, steps_per_block + 1) in float32. A block starts with a refresh
// call: the whole canvas, which refills the K/V cache, and whose sampled token for the block's
// first position (the plain sample_tokens: no alg, no alg_temp) is committed unconditionally,
// whatever the alg or threshold. The block's later calls run positions [block start, end of the
// canvas) against the cached K/V of the positions before it (prefix), or the block alone against
// the cached K/V of every other position (dual); the shift is applied within that region (its
// first row keeps its own logits); only the block's masks are candidates.
//   schedule: inner call j (1, 2, ...) commits int(masks * (1 - timesteps[j+1] / timesteps[j]))
//     (float32, masks = the block's masks averaged over the batch), all of them at
//     j = steps_per_block - 1, per row the most confident or drawn as above.
//   threshold_rule (one prompt): every call takes the top `block masks` by confidence and keeps
//     the first and every one >= threshold; no step limit: calls go on until the block is full.
//   A block ends when it has no mask left.
//
// Official quirks reproduced deliberately:
//   - the schedule's round-half-even and its dropped zeros (no cache);
//   - the refresh call commits the block's first token unconditionally, and samples every
//     position of the canvas (at temperature > 0 one Categorical draw per position of the whole
//     batch, [B * T, V] logits, though one token per row is kept);
//   - `if inner_step == steps_per_block: break` comes after the model call and its sampling: with
//     one step per block, each block runs a call that commits nothing and keeps block_length - 1
//     masks (which stay in the output);
//   - no cache: a multinomial pick of a zero-probability position (a confidence whose softmax
//     underflows) writes the mask id there, as the official x[j, index] = x_[j, index] does;
//   - a committed mask id (the model predicting <|mask|>) leaves the position masked.
// One deliberate difference: the official threshold loop never ends when, at temperature 0, a
// call can commit nothing but the mask id (the next call would be identical); here the block (no
// cache: the generation) ends instead, leaving its masks.
//
// Like every sampler it runs a step at a time (step_sampler.h): one forward per call, so these
// generations batch with others in one packed forward per step. Refused as the official code
// refuses (InvalidArgument naming the field): alg origin (without threshold_rule), a padded batch
// with a cache ("prompts": its mask no longer matches the key length), dual cache or
// threshold_rule with more than one prompt ("prompts": the official code breaks or never ends),
// block_length not dividing gen_length or steps not a multiple of the number of blocks (cache
// modes).
#pragma once

#include <memory>

#include "common/sampler/step_sampler.h"

namespace unmask::sampler {

struct DreamCacheOptions {
  generation::CacheKind cache = generation::CacheKind::kNone;
  // Fast-dLLM's alg confidence_threshold: the confidence is the sampled token's probability
  // (params.alg and alg_temp have no effect) and params.threshold bounds what a call commits.
  bool threshold_rule = false;
  // Dream's shift (the official right_shift_logits, default true); false reads each position's
  // own logits.
  bool right_shift_logits = true;
};

// The sampler's name in GenerationResult::sampler: "dream_fastdllm", "dream_prefix_cache",
// "dream_dual_cache", with "+threshold" under threshold_rule.
const char* DreamCacheModeName(const DreamCacheOptions& options);

// The sampler for `prompts`. From params: gen_length, block_length (cache modes), steps,
// temperature, top_p, top_k, alg, alg_temp, eps, threshold (threshold_rule), seed, mask_id;
// the rest is validated as for sampler dream (ValidateParams) except block_length. Errors: as
// above, and those of NormalizePromptBatch and ValidateParams, as they are.
StatusOr<std::unique_ptr<StepSampler>> StartDreamCacheStepSampler(const model::LladaModel& model,
                                                                  const PromptBatch& prompts,
                                                                  const GenerationParams& params,
                                                                  const DreamCacheOptions& options);

}  // namespace unmask::sampler
