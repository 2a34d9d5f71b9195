#include "common/sampler/sampler_registry.h"

#include "common/model/llada_model.h"
#include "common/sampler/reference_sampler.h"
#include "common/sampler/step_sampler.h"

namespace unmask::sampler {

StatusOr<GenerationResult> Generate(SamplerMode mode, const model::ModelBackend& model, const PromptBatch& prompts,
                                    const GenerationParams& params, const FastOptions& options,
                                    const StepCallback& on_step) {
  const auto* llada = dynamic_cast<const model::LladaModel*>(&model);
  if (llada == nullptr) {
    if (mode == SamplerMode::kReference) return ReferenceGenerate(model, prompts, params, on_step);
    return InvalidArgumentError(std::string("sampler mode '") + SamplerModeName(mode) +
                                "' needs the LLaDA model itself (hidden states, K/V cache); this backend only gives logits");
  }
  UNMASK_ASSIGN_OR_RETURN(auto sampler, StartStepSampler(mode, *llada, prompts, params, options));
  return RunSteps(*llada, *sampler, on_step, std::string(sampler->Result().sampler) + " sampler");
}

StatusOr<GenerationResult> Generate(const model::ModelBackend& model, const PromptBatch& prompts,
                                    const GenerationParams& params, const StepCallback& on_step) {
  return Generate(params.sampler, model, prompts, params, generation::FastOptionsOf(params), on_step);
}

}  // namespace unmask::sampler
