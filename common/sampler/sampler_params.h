// What the samplers run: the generation library's parameters (common/generation), named here as
// the samplers use them, and the batch of prompts.
#pragma once

#include <cstdint>
#include <vector>

#include "common/generation/canvas.h"
#include "common/generation/params.h"
#include "common/generation/sampler_mode.h"
#include "common/generation/validate.h"
#include "common/util/status.h"

namespace unmask::sampler {

using generation::AllSamplerModes;
using generation::Canvas;
using generation::ValidateCanvas;
using generation::LladaSamplerModes;
using generation::CacheKind;
using generation::DecodeRule;
using generation::FastModeName;
using generation::FastModeOf;
using generation::FastOptions;
using generation::GenerationParams;
using generation::ParseRemasking;
using generation::ParseSamplerMode;
using generation::Remasking;
using generation::SamplerMode;
using generation::SamplerModeName;
using generation::ValidateFastOptions;
using generation::ValidateParams;

// A batch of prompts. Rows of different lengths are left-padded with pad_id and masked out of
// attention, as the official code does with a left-padding tokenizer.
struct PromptBatch {
  std::vector<std::vector<std::int64_t>> ids;
  // Optional, same shape as ids: 1 = real token, 0 = padding. Empty = all ones.
  std::vector<std::vector<std::int64_t>> attention_mask;
  // Infilling / a template with holes (common/generation/canvas.h), the same for every row:
  // only the region's holes are unmasked, the fixed tokens and the suffix never change.
  Canvas canvas;
};

// Returns a rectangular batch (left-padded where rows differ) or an error naming the row.
StatusOr<PromptBatch> NormalizePromptBatch(const PromptBatch& batch, std::int64_t pad_id, std::int64_t vocab_size);

}  // namespace unmask::sampler
