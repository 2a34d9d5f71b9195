// ReferenceSampler: the official LLaDA generate(), reproduced exactly.
//
// Prompt + gen_length mask tokens; gen_length split into blocks of block_length decoded left to
// right; steps / num_blocks steps per block with the official transfer schedule; each step runs
// the model over the whole sequence (and, with cfg_scale > 0, over a copy whose prompt is
// masked, combining un + (cfg + 1)(cond - un)); optional Gumbel-max noise drawn in float64 over
// the full logits (rand_like, then for random remasking one rand(batch, length) — the same
// generator draws in the same order and shapes as the reference, so seeded runs match it); the
// positions with the highest confidence (softmax probability of the chosen token, or a uniform
// draw for random remasking) among the masked positions of the current block are unmasked.
//
// The two EOS switches keep the reference's exact semantics:
//  - logits_eos_inf: the EOS logit is -inf before sampling, so EOS is never chosen.
//  - confidence_eos_eot_inf: after the tokens are chosen, the reference runs
//    `logits_with_noise[:, :, EOS] = logits[:, :, EoT] = -inf`. With temperature 0 the two names
//    are one tensor, so both EOS and EoT get confidence 0; with temperature > 0 only EoT does
//    (the EOS write lands in the noisy copy, which is no longer read).
//
// A canvas (PromptBatch::canvas: a template's fixed tokens in the generated region, a suffix
// after it) needs no change to the loop: only masked positions are ever candidates, and each
// block's transfer schedule counts the block's masked positions, so fixed tokens shorten it.
#pragma once

#include "common/model/model_backend.h"
#include "common/model/llada_model.h"
#include "common/sampler/sampler_params.h"
#include "common/sampler/step_sampler.h"
#include "common/sampler/step_event.h"
#include "common/util/status.h"

namespace unmask::sampler {

// Runs the reference algorithm. LibTorch errors are caught here and returned as Internal.
// A callback returning false ends the run with Cancelled.
StatusOr<GenerationResult> ReferenceGenerate(const model::ModelBackend& model, const PromptBatch& prompts,
                                             const GenerationParams& params, const StepCallback& on_step = {});

// The same loop as a StepSampler (step_sampler.h) over a LladaModel: what the executor and
// Generate run for the reference on a LladaModel at temperature > 0.
StatusOr<std::unique_ptr<StepSampler>> StartReferenceStepSampler(const model::LladaModel& model,
                                                                 const PromptBatch& prompts,
                                                                 const GenerationParams& params);

}  // namespace unmask::sampler
