// Log-probabilities of what a step commits (GenerationParams::logprobs): taken from the step's
// logits where the candidates are known — after guidance and the EOS switches that bar a token,
// before temperature, noise, top-k/top-p and anything that alters the logits to rank positions —
// and attached to the step's event once the sampler has chosen.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <utility>

#include "common/sampler/step_event.h"

namespace unmask::sampler {

class StepLogprobs {
 public:
  StepLogprobs() = default;  // takes nothing: Attach then does nothing

  // logits [n, V] of the candidate positions (row `rows[i]`, sequence position `positions[i]`, both
  // [n] long). k: the alternatives to keep (params.logprobs; < 0 takes nothing).
  static StepLogprobs Take(const at::Tensor& logits, const at::Tensor& rows, const at::Tensor& positions, int k);
  // The same from logits [B, L, V] over sequence positions offset .. offset + L - 1, for the
  // positions where `where` ([B, L] bool) is set.
  static StepLogprobs TakeWhere(const at::Tensor& logits, const at::Tensor& where, std::int64_t offset, int k);

  bool taken() const { return k_ >= 0; }
  // Entry i's log-probability of `token` and its alternatives (requires taken()).
  TokenLogprob Of(std::int64_t i, std::int64_t token) const;
  // Fills ev.logprobs, one per entry of ev.positions (relative to prompt_len) with its token. A
  // position this step took no logits for (early stop's EOS padding: placed by the rule, not the
  // model) reports logprob 0 and no alternatives.
  void Attach(StepEvent& ev, std::int64_t prompt_len) const;

 private:
  int k_ = -1;
  at::Tensor logp_;                                      // [n, V] float, on the CPU
  at::Tensor top_values_, top_ids_;                      // [n, k]
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> index_;  // (row, position) -> i
};

}  // namespace unmask::sampler
