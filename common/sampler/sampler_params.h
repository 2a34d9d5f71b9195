// What a generation asks for: the arguments of the official LLaDA generate(), plus a seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/checkpoint/llada_config.h"
#include "common/util/status.h"

namespace unmask::sampler {

enum class Remasking { kLowConfidence, kRandom };
StatusOr<Remasking> ParseRemasking(const std::string& text);  // "low_confidence" | "random"
const char* RemaskingName(Remasking r);

struct GenerationParams {
  std::int64_t steps = 128;
  std::int64_t gen_length = 128;
  std::int64_t block_length = 128;
  double temperature = 0.0;  // 0: argmax; > 0: Gumbel-max noise in float64
  double cfg_scale = 0.0;    // classifier-free guidance; 0: off
  Remasking remasking = Remasking::kLowConfidence;
  std::int64_t mask_id = 126336;
  // The ids the two EOS switches act on (the official code fixes them to LLaDA's).
  std::int64_t eos_id = 126081;
  std::int64_t eot_id = 126348;
  bool logits_eos_inf = false;          // EOS logit -inf before sampling
  bool confidence_eos_eot_inf = false;  // see reference_sampler.h for the exact semantics
  std::uint64_t seed = 0;
};

// Refuses invalid combinations with a message that names the field and the allowed values.
Status ValidateParams(const GenerationParams& params, const checkpoint::LladaConfig& config,
                      std::int64_t prompt_length);

// A batch of prompts. Rows of different lengths are left-padded with pad_id and masked out of
// attention, as the official code does with a left-padding tokenizer.
struct PromptBatch {
  std::vector<std::vector<std::int64_t>> ids;
  // Optional, same shape as ids: 1 = real token, 0 = padding. Empty = all ones.
  std::vector<std::vector<std::int64_t>> attention_mask;
};

// Returns a rectangular batch (left-padded where rows differ) or an error naming the row.
StatusOr<PromptBatch> NormalizePromptBatch(const PromptBatch& batch, std::int64_t pad_id, std::int64_t vocab_size);

}  // namespace unmask::sampler
