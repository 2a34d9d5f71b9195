// The fast sampling modes: one loop (this file) shared by every mode, which differ only in how
// a step gets the current block's hidden states (block_logits_sampler.h, prefix_cache_sampler.h,
// dual_cache_sampler.h — each header says exactly what it changes relative to the reference)
// and in the decoding rule (parallel_decoding.h). sampler_registry.h maps mode names to these
// options.
//
// Common to every fast mode, relative to reference_sampler.h:
//  - Inputs, validation (ValidateParams, the same errors), left padding, classifier-free
//    guidance, the two EOS switches, remasking, StepEvents and cancellation are the reference's.
//  - Logits, noise and softmax are computed only for the current block's rows (block_logits).
//  - Confidences are Fast-dLLM's: the softmax in float64 (the reference takes it in the logits'
//    dtype; near-1 probabilities then tie, and top-k breaks ties its own way). Plain
//    block_logits (no cache, the reference's schedule) keeps the reference's dtype, so that it
//    stays exact to the reference. With early stop off, prefix_cache and dual_cache (with or
//    without threshold) give Fast-dLLM's ids and forward counts (tests/sampler/fastdllm_golden_test.cc).
//  - rule kSchedule unmasks the reference's per-step counts (steps / num_blocks steps per block);
//    kThreshold / kFactor decide the count per step and row from the confidences and move on to
//    the next block when the current one has no masks left (a block takes 1 to block_length
//    steps; `steps` is then only validated, not used). StepEvent::step counts the steps actually
//    run; StepEvent::step_in_block restarts at 0 in each block.
//  - early_stop (default on): after a step, every batch row whose current block has no masks
//    left and whose block's LAST token is eos_id has every position after the block set to
//    eos_id — LLaDA pads answers with EOS, so a block ending in EOS means the rest of the row
//    would be EOS — and takes no further part (it still rides along in the batched forward, its
//    tokens no longer change). The generation stops when every row is done. The filled positions
//    are reported in the StepEvent of the step that completed the block, together with the
//    tokens that step unmasked. An EOS elsewhere in the block (not last) does not stop anything.
//    With early stop off, or when no block ends in EOS, it changes nothing.
//  - With a canvas (PromptBatch::canvas: a suffix, or a template's fixed tokens) early stop is
//    off: the text after an EOS is not padding there.
//  - GenerationResult::sampler is the mode name (FastModeName); steps_run counts forwards.
//  - FastGenerate is StartFastStepSampler driven alone (RunSteps); the executor drives many
//    together (step_sampler.h).
//  - LibTorch errors are caught and returned as Internal; a callback returning false ends the
//    run with Cancelled ("generation cancelled after step N", as the reference).
#pragma once

#include "common/model/llada_model.h"
#include "common/sampler/sampler_params.h"
#include "common/sampler/step_sampler.h"
#include "common/sampler/step_event.h"
#include "common/util/status.h"

namespace unmask::sampler {

// FastOptions (common/generation/params.h: FastOptionsOf) say which cache and rule; they are
// checked with ValidateFastOptions before the first step.
StatusOr<GenerationResult> FastGenerate(const model::LladaModel& model, const PromptBatch& prompts,
                                        const GenerationParams& params, const FastOptions& options,
                                        const StepCallback& on_step = {});

// The same generation as a StepSampler (step_sampler.h); GenerationResult::sampler is `name`.
StatusOr<std::unique_ptr<StepSampler>> StartFastStepSampler(const model::LladaModel& model, const PromptBatch& prompts,
                                                            const GenerationParams& params, const FastOptions& options,
                                                            const char* name);

}  // namespace unmask::sampler
