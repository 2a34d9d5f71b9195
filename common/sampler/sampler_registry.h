// One entry point that runs any sampling mode (names and parsing: common/generation/sampler_mode.h).
//
//   reference                the official generate() (reference_sampler.h); FastOptions ignored
//   block_logits             logits/softmax for the current block only (block_logits_sampler.h)
//   prefix_cache             + prefix KV cache refreshed per block (prefix_cache_sampler.h)
//   dual_cache               + prefix and suffix KV cache (dual_cache_sampler.h)
//   threshold, factor        block_logits with a parallel decoding rule (parallel_decoding.h);
//                            "block_logits+threshold" / "block_logits+factor" are accepted too
//   prefix_cache+threshold, prefix_cache+factor, dual_cache+threshold, dual_cache+factor
//   llada2                   LLaDA2.x's block diffusion (llada2_sampler.h), options from params
//
// The fast modes share the options and semantics of fast_sampler.h (early stop on by default);
// the reference never stops early, it always runs every step.
#pragma once

#include <string>
#include <vector>

#include "common/model/model_backend.h"
#include "common/sampler/fast_sampler.h"
#include "common/sampler/sampler_params.h"
#include "common/sampler/step_event.h"
#include "common/util/status.h"

namespace unmask::sampler {

// Runs `mode`. For a fast mode, options.cache and options.rule are set from the mode (threshold,
// factor and early_stop are taken from `options`), and the backend must be a model::LladaModel
// (the fast modes need its hidden states and K/V); any other backend is refused with
// InvalidArgument. For kReference `options` is ignored; at temperature 0 on a model::LladaModel
// it computes the LM head over the current block's rows only (block_logits' forward without
// early stop: the reference's ids and unmasking order, proven by the golden test). On a
// model::LladaModel every mode runs as a StepSampler driven alone (step_sampler.h: what the
// executor packs with other jobs); on any other backend the reference runs ReferenceGenerate,
// the official loop as written.
StatusOr<GenerationResult> Generate(SamplerMode mode, const model::ModelBackend& model, const PromptBatch& prompts,
                                    const GenerationParams& params, const FastOptions& options = {},
                                    const StepCallback& on_step = {});

// Runs params.sampler with the options params holds (generation::FastOptionsOf): what the
// executor and unmask-engine call.
StatusOr<GenerationResult> Generate(const model::ModelBackend& model, const PromptBatch& prompts,
                                    const GenerationParams& params, const StepCallback& on_step = {});

}  // namespace unmask::sampler
