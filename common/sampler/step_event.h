// What a sampler reports after each diffusion step, and the callback that receives it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace unmask::sampler {

struct StepEvent {
  std::int64_t step = 0;           // 0-based over the whole generation
  std::int64_t block = 0;          // 0-based block index
  std::int64_t step_in_block = 0;  // 0-based within the block
  // Per batch row: generated positions (0-based after the prompt) unmasked at this step, in
  // ascending order, and the token ids placed there.
  std::vector<std::vector<std::int64_t>> positions;
  std::vector<std::vector<std::int64_t>> tokens;
  double elapsed_seconds = 0;  // since the generation started
};

// Returns false to cancel the generation; it then stops before the next step.
using StepCallback = std::function<bool(const StepEvent&)>;

struct GenerationResult {
  // Per row: the gen_length generated ids (prompt excluded).
  std::vector<std::vector<std::int64_t>> output;
  std::int64_t steps_run = 0;
  double seconds = 0;
  const char* sampler = "reference";
};

}  // namespace unmask::sampler
