// LLaDA2.x's block-diffusion sampler (issue 29), as the official LLaDA2MoeModelLM.generate
// computes it (tests/data/moe-golden.md, "generate step by step"): the canvas is the prompt then
// masks, padded to whole blocks of block_length counted from position 0; blocks after the last
// one the prompt fills are denoised in order, each with the same schedule of tokens per step; every
// step runs the window up to the block's end under block-causal attention (a block sees itself
// and the blocks before it), samples the block's tokens (argmax of the probabilities at
// temperature 0; else temperature, top-k, top-p and one multinomial draw per position) and
// commits every masked position whose confidence is above the threshold, or the schedule's count
// of the most confident ones when fewer are. EOS ends the generation after its block (and at once
// with eos_early_stop, once nothing before it is masked).
//
// LLaDA2.1's generate (Llada2Options::token_editing; tests/data/moe-golden.md, "LLaDA2.1") has no
// schedule: each step commits the masked positions above the threshold, or the num_to_transfer
// most confident; it also edits: a committed, non-prompt position of the block whose new sample
// differs and is more probable than editing_threshold takes the new token. A block ends at the
// first step that finds no mask and edits nothing, or after max_post_steps steps without masks.
// The official loop runs every block even past an EOS unless eos_early_stop; here an EOS ends the
// generation after its block either way, since no later block can change the ids returned (they
// stop at the first EOS): the same ids in fewer steps. An edit is reported in the step's event
// like a commit (the position with its new token).
//
// A template (PromptBatch::canvas with fixed tokens in the region) keeps its fixed tokens: they are
// never edited, an EOS then ends nothing early and pads nothing. A suffix is refused (field
// canvas.suffix): under block-causal attention no block sees the text after it.
//
// Like every sampler it runs a step at a time (step_sampler.h), so LLaDA2 generations batch with
// each other and with LLaDA's in one packed forward per step.
//
// The cache (Llada2Options::cache): under block-causal attention the K/V of the blocks before the
// current one depend only on those blocks, whose tokens no longer change. So a block's first step
// runs the whole window and keeps every layer's K/V; its later steps run the block's positions
// alone against the kept K/V of the blocks before it. The next block's first step refills the
// cache, so a block's K/V are always those of its final tokens. Without the cache every step
// recomputes the whole window, as the official code does; both give the same tokens (tested).
#pragma once

#include <memory>

#include "common/sampler/step_sampler.h"

namespace unmask::sampler {

// LLaDA2's own options; gen_length, block_length, steps (per block), temperature, seed and the
// mask / EOS ids come from GenerationParams.
struct Llada2Options {
  double threshold = 0.95;     // commit masked positions whose confidence is strictly above this
  std::int64_t minimal_topk = 1;  // steps per block are capped at gen_length / minimal_topk
  std::int64_t top_k = 0;      // sampling: keep the k most likely tokens; 0 = off
  double top_p = 1.0;          // sampling: nucleus; 1 = off
  bool eos_early_stop = false;  // stop as soon as an EOS is committed with nothing masked before it
  bool cache = true;            // keep the finished blocks' K/V (above)
  // LLaDA2.1 (above): steps and minimal_topk then have no effect, as in its generate().
  bool token_editing = false;
  double editing_threshold = 0.9;
  std::int64_t max_post_steps = 16;
  std::int64_t num_to_transfer = 1;
};

// The options params holds (sampler llada2 or llada21: common/generation/params.h), the cache on;
// token editing for llada21.
Llada2Options Llada2OptionsOf(const GenerationParams& params);

// The sampler for one prompt (LLaDA2's generate takes one). InvalidArgument naming the field for
// more than one prompt or out-of-range options; the prompt's ids are checked against the vocabulary.
StatusOr<std::unique_ptr<StepSampler>> StartLlada2StepSampler(const model::LladaModel& model, const PromptBatch& prompts,
                                                              const GenerationParams& params,
                                                              const Llada2Options& options);

}  // namespace unmask::sampler
