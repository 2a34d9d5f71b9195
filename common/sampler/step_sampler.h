// A generation as a sequence of steps that a caller drives: each step asks for one forward
// (NextForward, a model::PackedSegment), the caller runs it — alone (RunSteps) or packed with
// the forwards of other generations in one model::LladaModel::HiddenPacked — and hands the
// segment's hidden states back (FinishStep), which picks and places the step's tokens.
//
// Because a step's forward is one segment of a packed pass whose rows are computed the same way
// whatever else is packed with them, and everything after the forward (head, noise, top-k,
// early stop) is the generation's own, a generation driven in a batch gives what it gives alone;
// each generation keeps its own seeded generator, so sampled (temperature > 0) generations keep
// their random streams. Every mode of sampler_registry.h runs this way on a LladaModel.
// StartStepSampler, StepTogether and RunSteps run under c10::InferenceMode (no autograd
// bookkeeping); call a sampler's methods only through them, or under InferenceMode too.
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/model/cuda_graph_forward.h"
#include "common/model/llada_model.h"
#include "common/model/packed_segment.h"
#include "common/sampler/sampler_params.h"
#include "common/sampler/step_event.h"
#include "common/util/status.h"

namespace unmask::sampler {

class StepSampler {
 public:
  virtual ~StepSampler() = default;
  // False once the generation is complete: every step run, or every row stopped early.
  virtual bool running() const = 0;
  // The forward the next step needs (only while running()). It may point at this sampler's
  // K/V cache: keep the sampler alive until the forward has run.
  virtual model::PackedSegment NextForward() = 0;
  // Runs the rest of the step on the hidden states of that forward ([R, T, d_model], as
  // HiddenPacked returns them for the segment) and reports it. StepEvent::elapsed_seconds is
  // left 0 for the caller. LibTorch errors are thrown.
  virtual StepEvent FinishStep(const at::Tensor& hidden) = 0;
  // The rows generated so far (all of them once !running()), steps run, the mode's name.
  virtual GenerationResult Result() const = 0;
  // Bytes of K/V cache held between steps.
  virtual std::int64_t CacheBytes() const = 0;

  // The forward of this sampler's step run alone: model.HiddenPacked({segment})[0], replayed from
  // this generation's CUDA graphs where the model has them on (ModelOptions::cuda_graphs,
  // cuda_graph_forward.h; a replayed result is valid until the next call).
  at::Tensor ForwardAlone(const model::LladaModel& model, const model::PackedSegment& segment);
  // Forwards captured as CUDA graphs and replayed so far (0 without graphs).
  std::int64_t graph_captures() const { return graphs_ ? graphs_->captures() : 0; }
  std::int64_t graph_replays() const { return graphs_ ? graphs_->replays() : 0; }

 private:
  bool graphs_made_ = false;
  std::unique_ptr<model::GraphedForward> graphs_;
};

// The sampler for `mode` (FastOptions as in sampler_registry.h's Generate; kLlada2 takes its
// options from params: llada2_sampler.h's Llada2OptionsOf). Errors: those of StartSampling
// (prompts, parameters) and ValidateFastOptions, or StartLlada2StepSampler's, as they are.
StatusOr<std::unique_ptr<StepSampler>> StartStepSampler(SamplerMode mode, const model::LladaModel& model,
                                                        const PromptBatch& prompts, const GenerationParams& params,
                                                        const FastOptions& options = {});
// params.sampler with the options params holds (generation::FastOptionsOf).
StatusOr<std::unique_ptr<StepSampler>> StartStepSampler(const model::LladaModel& model, const PromptBatch& prompts,
                                                        const GenerationParams& params);

// One step of every sampler in `samplers` (all running, all on `model`) with one packed forward:
// their NextForward segments in one HiddenPacked, then each one's FinishStep. Per sampler, in
// order: its step's event, or its error. A failure stays with its sampler: when the packed
// forward throws, each segment runs alone so that only the ones that fail alone fail (Internal,
// prefixed with the sampler's mode); the others' steps are what they would have been. On the
// CPU the samplers' FinishSteps run spread over the intra-op threads (model::ForEachItem).
// `timing`, when given, receives where the step's time went.
struct StepTiming {
  double forward_seconds = 0;  // NextForward and the packed forward
  double finish_seconds = 0;   // the samplers' FinishSteps
};
std::vector<StatusOr<StepEvent>> StepTogether(const model::LladaModel& model, const std::vector<StepSampler*>& samplers,
                                              StepTiming* timing = nullptr);

// Drives `sampler` alone to the end, reporting every step to `on_step`. Cancelled ("generation
// cancelled after step N") when the callback says stop; LibTorch errors as Internal, prefixed
// with `what` ("<mode> sampler: ...").
StatusOr<GenerationResult> RunSteps(const model::LladaModel& model, StepSampler& sampler, const StepCallback& on_step,
                                    const std::string& what);

}  // namespace unmask::sampler
