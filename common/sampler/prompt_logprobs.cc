#include "common/sampler/prompt_logprobs.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "common/generation/sampler_mode.h"
#include "common/sampler/step_logprobs.h"

namespace unmask::sampler {

PromptScoring ScoringFor(const model::LladaModel& model, const generation::GenerationParams& params,
                         std::int64_t sequence_length) {
  PromptScoring s;
  s.k = std::max(0, params.prompt_logprobs);
  if (model.config().architecture == checkpoint::Architecture::kLlada2Moe) s.causal_block = params.block_length;
  s.tokens_per_pass = sequence_length * (params.cfg_scale > 0 ? 2 : 1);
  s.attention_query_chunk = params.attention_query_chunk;
  return s;
}

PromptScorer::PromptScorer(const model::LladaModel& model, std::vector<std::int64_t> prompt,
                           const PromptScoring& scoring)
    : model_(model), prompt_(std::move(prompt)), scoring_(scoring), out_(prompt_.size()) {
  const auto length = static_cast<std::int64_t>(prompt_.size());
  if (done()) return;
  rows_per_pass_ = std::max<std::int64_t>(1, scoring_.tokens_per_pass / length);
  const auto longs = at::TensorOptions().dtype(at::kLong).device(model_.device());
  ids_ = at::tensor(prompt_, at::TensorOptions().dtype(at::kLong)).to(model_.device()).unsqueeze(0);
  masks_ = at::full({1, length}, model_.config().mask_token_id, longs);
  columns_ = at::arange(length, longs).unsqueeze(0);
}

void PromptScorer::Next() {
  if (done()) return;
  const auto length = static_cast<std::int64_t>(prompt_.size());
  const auto longs = at::TensorOptions().dtype(at::kLong).device(model_.device());
  const std::int64_t first = next_, n = std::min(rows_per_pass_, length - next_);
  const at::Tensor scored = at::arange(first, first + n, longs);  // row r scores position first + r
  model::PackedSegment seg;
  seg.ids = at::where(columns_ < scored.unsqueeze(1), ids_, masks_);  // [n, L]
  seg.causal_block = scoring_.causal_block;
  seg.attention_query_chunk = scoring_.attention_query_chunk;
  const at::Tensor hidden = model_.HiddenPacked({seg})[0];  // [n, L, d_model]
  const at::Tensor rows = at::arange(n, longs);
  const std::int64_t shift = model_.config().shifted_prediction() ? 1 : 0;
  const at::Tensor logits = model_.HeadLogits(hidden.index({rows, scored - shift}));  // [n, V]
  const StepLogprobs lp = StepLogprobs::Take(logits, rows, scored, scoring_.k);
  for (std::int64_t r = 0; r < n; ++r) out_[static_cast<std::size_t>(first + r)] = lp.Of(r, prompt_[first + r]);
  next_ += n;
  ++forwards_;
}

std::vector<std::optional<TokenLogprob>> PromptLogprobs(const model::LladaModel& model,
                                                        const std::vector<std::int64_t>& prompt,
                                                        const PromptScoring& scoring) {
  PromptScorer scorer(model, prompt, scoring);
  while (!scorer.done()) scorer.Next();
  return scorer.result();
}

}  // namespace unmask::sampler
