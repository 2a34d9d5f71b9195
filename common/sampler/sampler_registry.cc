#include "common/sampler/sampler_registry.h"

#include "common/model/llada_model.h"
#include "common/sampler/reference_sampler.h"

namespace unmask::sampler {

StatusOr<GenerationResult> Generate(SamplerMode mode, const model::ModelBackend& model, const PromptBatch& prompts,
                                    const GenerationParams& params, const FastOptions& options,
                                    const StepCallback& on_step) {
  FastOptions fast = options;
  const auto* llada = dynamic_cast<const model::LladaModel*>(&model);
  if (!FastModeOf(mode, &fast.cache, &fast.rule)) {
    // Greedy reference: the LM head over the current block's rows only (block_logits' forward,
    // no early stop). The reference reads nothing else of its [B, L, V] logits at temperature 0,
    // so the ids and the unmasking order are the reference's (the golden test runs this path);
    // with a 126k vocabulary the LM head is most of a small model's step.
    if (llada != nullptr && params.temperature == 0) {
      FastOptions exact;
      exact.early_stop = false;
      auto r = FastGenerate(*llada, prompts, params, exact, on_step);
      if (r.ok()) r->sampler = SamplerModeName(SamplerMode::kReference);
      return r;
    }
    return ReferenceGenerate(model, prompts, params, on_step);
  }
  if (llada == nullptr)
    return InvalidArgumentError(std::string("sampler mode '") + SamplerModeName(mode) +
                                "' needs the LLaDA model itself (hidden states, K/V cache); this backend only gives logits");
  return FastGenerate(*llada, prompts, params, fast, on_step);
}

StatusOr<GenerationResult> Generate(const model::ModelBackend& model, const PromptBatch& prompts,
                                    const GenerationParams& params, const StepCallback& on_step) {
  return Generate(params.sampler, model, prompts, params, generation::FastOptionsOf(params), on_step);
}

}  // namespace unmask::sampler
