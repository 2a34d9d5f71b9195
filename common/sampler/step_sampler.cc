#include "common/sampler/step_sampler.h"

#include <c10/core/InferenceMode.h>

#include <chrono>
#include <memory>
#include <string>

#include "common/model/threading.h"
#include "common/sampler/dream_cache_sampler.h"
#include "common/sampler/dream_sampler.h"
#include "common/sampler/fast_sampler.h"
#include "common/sampler/llada2_sampler.h"
#include "common/sampler/reference_sampler.h"

namespace unmask::sampler {

StatusOr<std::unique_ptr<StepSampler>> StartStepSampler(SamplerMode mode, const model::LladaModel& model,
                                                        const PromptBatch& prompts, const GenerationParams& params,
                                                        const FastOptions& options) {
  c10::InferenceMode inference;  // as every step runs: no autograd bookkeeping
  if (mode == SamplerMode::kDream) return StartDreamStepSampler(model, prompts, params);
  DreamCacheOptions dream;
  generation::DecodeRule rule;
  if (generation::DreamCacheModeOf(mode, &dream.cache, &rule)) {
    dream.threshold_rule = rule == generation::DecodeRule::kThreshold;
    return StartDreamCacheStepSampler(model, prompts, params, dream);
  }
  if (generation::IsBlockDiffusion(mode)) {
    Llada2Options o = Llada2OptionsOf(params);
    o.token_editing = mode == SamplerMode::kLlada21;
    return StartLlada2StepSampler(model, prompts, params, o);
  }
  FastOptions fast = options;
  if (FastModeOf(mode, &fast.cache, &fast.rule))
    return StartFastStepSampler(model, prompts, params, fast, FastModeName(fast.cache, fast.rule));
  if (params.temperature > 0) return StartReferenceStepSampler(model, prompts, params);
  // Greedy reference: the LM head over the current block's rows only (block_logits' forward,
  // no early stop). The reference reads nothing else of its [B, L, V] logits at temperature 0,
  // so the ids and the unmasking order are the reference's (the golden test runs this path);
  // with a 126k vocabulary the LM head is most of a small model's step.
  FastOptions exact;
  exact.early_stop = false;
  return StartFastStepSampler(model, prompts, params, exact, SamplerModeName(SamplerMode::kReference));
}

StatusOr<std::unique_ptr<StepSampler>> StartStepSampler(const model::LladaModel& model, const PromptBatch& prompts,
                                                        const GenerationParams& params) {
  return StartStepSampler(params.sampler, model, prompts, params, generation::FastOptionsOf(params));
}

at::Tensor StepSampler::ForwardAlone(const model::LladaModel& model, const model::PackedSegment& segment) {
  if (!graphs_made_) {
    graphs_ = model::GraphedForward::Make(model);
    graphs_made_ = true;
  }
  return graphs_ ? graphs_->Hidden(segment) : model.HiddenPacked({segment})[0];
}

namespace {

Status StepError(const StepSampler& sampler, const std::exception& e) {
  return InternalError(std::string(sampler.Result().sampler) + " sampler: " + e.what());
}

// The hidden states of every segment, packed; when the packed forward throws, of each segment
// alone, or its error.
std::vector<StatusOr<at::Tensor>> Forwards(const model::LladaModel& model, const std::vector<StepSampler*>& samplers,
                                           const std::vector<model::PackedSegment>& segments) {
  std::vector<StatusOr<at::Tensor>> hidden;
  try {
    if (segments.size() == 1) {  // one generation alone: its CUDA graphs where it has them
      hidden.emplace_back(samplers[0]->ForwardAlone(model, segments[0]));
      return hidden;
    }
    for (at::Tensor& h : model.HiddenPacked(segments)) hidden.emplace_back(std::move(h));
    return hidden;
  } catch (const std::exception&) {
    hidden.clear();
  }
  for (std::size_t j = 0; j < segments.size(); ++j) {
    try {
      hidden.emplace_back(model.HiddenPacked({segments[j]})[0]);
    } catch (const std::exception& e) {
      hidden.emplace_back(StepError(*samplers[j], e));
    }
  }
  return hidden;
}

}  // namespace

std::vector<StatusOr<StepEvent>> StepTogether(const model::LladaModel& model, const std::vector<StepSampler*>& samplers,
                                              StepTiming* timing) {
  c10::InferenceMode inference;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::vector<StatusOr<StepEvent>> events(samplers.size(), StatusOr<StepEvent>(InternalError("step not run")));
  std::vector<StepSampler*> packed;
  std::vector<std::size_t> where;
  std::vector<model::PackedSegment> segments;
  for (std::size_t j = 0; j < samplers.size(); ++j) {
    try {
      segments.push_back(samplers[j]->NextForward());
      packed.push_back(samplers[j]);
      where.push_back(j);
    } catch (const std::exception& e) {
      events[j] = StepError(*samplers[j], e);
    }
  }
  if (segments.empty()) return events;
  std::vector<StatusOr<at::Tensor>> hidden = Forwards(model, packed, segments);
  if (model.options().time_forwards) {  // waits for the device (one stream: the last output will do)
    for (auto it = hidden.rbegin(); it != hidden.rend(); ++it) {
      if (it->ok()) {
        (void)(*it)->flatten()[0].item<float>();
        break;
      }
    }
  }
  const auto forwarded = Clock::now();
  // Each sampler's step is its own (its tensors, its generator): they run side by side.
  model::ForEachItem(static_cast<std::int64_t>(packed.size()), model.device().is_cpu(), [&](std::int64_t i) {
    if (!hidden[i].ok()) {
      events[where[i]] = hidden[i].status();
      return;
    }
    try {
      events[where[i]] = packed[i]->FinishStep(*hidden[i]);
    } catch (const std::exception& e) {
      events[where[i]] = StepError(*packed[i], e);
    }
  });
  if (timing != nullptr) {
    timing->forward_seconds = std::chrono::duration<double>(forwarded - start).count();
    timing->finish_seconds = std::chrono::duration<double>(Clock::now() - forwarded).count();
  }
  return events;
}

StatusOr<GenerationResult> RunSteps(const model::LladaModel& model, StepSampler& sampler, const StepCallback& on_step,
                                    const std::string& what) {
  c10::InferenceMode inference;
  const auto start = std::chrono::steady_clock::now();
  auto since_start = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  try {
    std::vector<std::vector<std::optional<TokenLogprob>>> logprobs;
    double forward_seconds = 0;
    while (sampler.running()) {
      const model::PackedSegment segment = sampler.NextForward();
      const auto forward_start = std::chrono::steady_clock::now();
      const at::Tensor hidden = sampler.ForwardAlone(model, segment);
      if (model.options().time_forwards) (void)hidden.flatten()[0].item<float>();  // waits for the device
      forward_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - forward_start).count();
      StepEvent ev = sampler.FinishStep(hidden);
      ev.elapsed_seconds = since_start();
      RecordLogprobs(ev, logprobs);
      if (on_step && !on_step(ev)) return CancelledError("generation cancelled after step " + std::to_string(ev.step));
    }
    GenerationResult result = sampler.Result();
    FinishLogprobs(result.output, logprobs);
    result.logprobs = std::move(logprobs);
    result.seconds = since_start();
    result.forward_seconds = forward_seconds;
    result.graph_captures = sampler.graph_captures();
    result.graph_replays = sampler.graph_replays();
    return result;
  } catch (const std::exception& e) {
    return InternalError(what + ": " + e.what());
  }
}

}  // namespace unmask::sampler
