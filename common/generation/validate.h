// The rules generation parameters follow, in one place. Every error is INVALID_ARGUMENT whose
// detail names the field as GenerationParams does ("steps", "block_length"); the proto door
// prefixes "params." (params_proto.h).
#pragma once

#include <cstdint>

#include "common/checkpoint/llada_config.h"
#include "common/generation/params.h"
#include "common/util/status.h"

namespace unmask::generation {

// What needs no model: gen_length in [1, kMaxGenLength], block_length >= 1 dividing gen_length,
// steps in [1, gen_length] and a multiple of the number of blocks, temperature in [0, 100],
// cfg_scale in [0, 100], threshold in [0, 1], factor in (0, 1e6], attention_query_chunk in
// [0, kMaxAttentionQueryChunk], logprobs in [-1, kMaxLogprobs] (-1 = none). The block-diffusion modes (llada2, llada21) instead:
// block_length and steps (per block) in [1, kMaxGenLength] with no divisibility, minimal_topk in
// [1, gen_length], top_k >= 0, top_p in (0, 1], and none of the LLaDA switches LLaDA2's
// generate() lacks (cfg_scale, random remasking, the EOS switches, early_stop off); llada21 also
// editing_threshold in [0, 1], max_post_steps in [0, kMaxPostSteps], num_to_transfer in
// [1, block_length]. A mode refuses the other modes' options but at their defaults.
Status ValidateFields(const GenerationParams& params);

// The model's architecture allows the mode: an LLaDA2 model (block-causal attention) runs the
// block-diffusion modes only, and they run on LLaDA2 models only. The error names field "sampler". Every door checks
// it (scheduler, executor, unmask-engine); the sampler library does not, so that a benchmark may
// run a LLaDA mode on an LLaDA2 checkpoint for comparison.
Status ValidateSamplerForModel(SamplerMode mode, const checkpoint::LladaConfig& config);

// The positions a generation runs over: prompt + gen_length; the block-diffusion modes pad them to
// whole blocks.
std::int64_t SequenceLength(const GenerationParams& params, std::int64_t prompt_length);

// ValidateFields, then what needs the model: SequenceLength within
// max_sequence_length, the mask id inside the vocabulary, and the EOS / EOT ids too when the EOS
// switches index the logits with them (elsewhere they are only compared with generated ids, so a
// checkpoint whose vocabulary lacks LLaDA-8B's ids still generates).
Status ValidateParams(const GenerationParams& params, const checkpoint::LladaConfig& config,
                      std::int64_t prompt_length);

// What a likelihood job (GenerationParams::likelihood) needs of the model and prompt: not an
// LLaDA2 model (no official estimate under block-causal attention), a continuation no longer
// than the prompt, and on Dream neither check_greedy nor guidance (its official evaluation has
// neither). ValidateParams runs it; ValidateFields checks the rest (continuation_tokens >= 1,
// mc_num in [1, kMaxMcNum], batch_size dividing it, no logprobs).
Status ValidateLikelihood(const LikelihoodParams& likelihood, const checkpoint::LladaConfig& config,
                          std::int64_t prompt_length, double cfg_scale);

// The fast samplers' own check of their options (threshold a finite number >= 0, factor finite
// and > 0, whatever the rule, so a bad value never hides behind another rule).
Status ValidateFastOptions(const FastOptions& options);

}  // namespace unmask::generation
