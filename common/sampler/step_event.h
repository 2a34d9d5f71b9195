// What a sampler reports after each diffusion step, and the callback that receives it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace unmask::sampler {

// A committed token's log-probability (GenerationParams::logprobs): the log-softmax of the step's
// logits at its position (after guidance and the EOS switches, before temperature and noise),
// and the `logprobs` most likely tokens there, most likely first.
struct TokenLogprob {
  std::int64_t token = 0;
  double logprob = 0;
  std::vector<std::pair<std::int64_t, double>> top;
  // The token's rank in the vocabulary: 1 + the tokens strictly more likely (vLLM's rank, so 1
  // for the most likely); 0 where unknown (a position the step took no logits for).
  std::int64_t rank = 0;
};

struct StepEvent {
  std::int64_t step = 0;           // 0-based over the whole generation
  std::int64_t block = 0;          // 0-based block index
  std::int64_t step_in_block = 0;  // 0-based within the block
  // Per batch row: generated positions (0-based after the prompt) unmasked at this step, in
  // ascending order, and the token ids placed there.
  std::vector<std::vector<std::int64_t>> positions;
  std::vector<std::vector<std::int64_t>> tokens;
  // With params.logprobs >= 0: per row, one per entry of positions (same order); else empty.
  std::vector<std::vector<TokenLogprob>> logprobs;
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
  // Host time spent in the model's forwards: the whole forward on the CPU; on a GPU the time to
  // launch its work (the device runs behind), so that a forward_seconds close to `seconds` says
  // the host, not the device, sets the pace. With ModelOptions::time_forwards, the forwards'
  // whole time, the device's included.
  double forward_seconds = 0;
  // Forwards captured as CUDA graphs and replayed (ModelOptions::cuda_graphs), 0 without.
  std::int64_t graph_captures = 0, graph_replays = 0;
  // With params.logprobs >= 0: per row, per generated position, the token's log-probability as
  // it was last committed (none for a template's fixed tokens and the padding after an early stop).
  std::vector<std::vector<std::optional<TokenLogprob>>> logprobs;
};

// Folds a step's logprobs into `into` (per row, per generated position; rows and positions added
// as they come): a position committed again (an edit) takes its latest.
void RecordLogprobs(const StepEvent& event, std::vector<std::vector<std::optional<TokenLogprob>>>& into);
// Recorded logprobs made to fit the finished output: each row sized to its output, and a position
// whose final token is not the one recorded (set by a rule after its commit, as LLaDA2's EOS
// padding) reports its final token with logprob 0 and no alternatives.
void FinishLogprobs(const std::vector<std::vector<std::int64_t>>& output,
                    std::vector<std::vector<std::optional<TokenLogprob>>>& logprobs);

}  // namespace unmask::sampler
