// One case of the official LLaDA golden file (tests/data/tiny-llada.golden.json): its generate()
// arguments and its prompts.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/generation/params.h"
#include "common/sampler/sampler_params.h"

namespace unmask::testing {

inline generation::GenerationParams GoldenCaseParams(const nlohmann::json& c) {
  generation::GenerationParams p;
  p.steps = c["steps"];
  p.gen_length = c["gen_length"];
  p.block_length = c["block_length"];
  p.temperature = c["temperature"];
  p.cfg_scale = c["cfg_scale"];
  p.remasking = *generation::ParseRemasking(c["remasking"]);
  p.logits_eos_inf = c["logits_eos_inf"];
  p.confidence_eos_eot_inf = c["confidence_eos_eot_inf"];
  p.seed = c["seed"];
  return p;
}

inline sampler::PromptBatch GoldenCasePrompts(const nlohmann::json& c) {
  sampler::PromptBatch prompts;
  prompts.ids = c["prompt"].get<std::vector<std::vector<std::int64_t>>>();
  return prompts;
}

}  // namespace unmask::testing
