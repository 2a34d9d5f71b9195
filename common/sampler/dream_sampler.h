// Dream's sampler (issue 30), as the official diffusion_generate (Dream's generation_utils.py)
// computes it (tests/data/dream-golden.md): the canvas is the prompt then gen_length masks, with
// no blocks; step i of `steps` runs the whole canvas, reads each masked position's logits from the
// position to its left (Dream predicts the next token; position 0 reads its own), and moves from
// time t = timesteps[i] to s = timesteps[i + 1] of linspace(1, eps, steps + 1) in float32:
//   origin: every masked position is drawn for commitment with probability 1 - s/t (1 at the last
//     step) from one rand per masked position, and the drawn ones are sampled;
//   the others: every masked position is sampled, with a confidence (maskgit_plus: the sampled
//     token's probability; topk_margin: top-1 minus top-2 probability; entropy: the negative
//     entropy), and int(masks * (1 - s/t)) of them (all at the last step) are committed: the most
//     confident, or with alg_temp > 0 drawn without replacement from softmax(confidence / alg_temp).
// Sampling: argmax at temperature 0; else logits / temperature, top_p then top_k (cut logits set to
// float32's lowest value), softmax, one multinomial draw per position (torch's Categorical).
// Every step runs (diffusion_generate has no early stop); a batch of prompts of different lengths
// is left-padded, the pads masked out of attention, positions counted from each row's first token.
//
// Like every sampler it runs a step at a time (step_sampler.h), so Dream generations batch with
// each other in one packed forward per step.
#pragma once

#include <memory>

#include "common/sampler/step_sampler.h"

namespace unmask::sampler {

// The sampler for `prompts` (params.sampler is dream; its alg, alg_temp, eps, temperature, top_k,
// top_p, steps and seed apply). Errors: StartSampling's (prompts, parameters), as they are.
StatusOr<std::unique_ptr<StepSampler>> StartDreamStepSampler(const model::LladaModel& model, const PromptBatch& prompts,
                                                             const GenerationParams& params);

}  // namespace unmask::sampler
