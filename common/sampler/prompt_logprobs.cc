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

std::vector<std::optional<TokenLogprob>> PromptLogprobs(const model::LladaModel& model,
                                                        const std::vector<std::int64_t>& prompt,
                                                        const PromptScoring& scoring) {
  const auto length = static_cast<std::int64_t>(prompt.size());
  std::vector<std::optional<TokenLogprob>> out(prompt.size());
  if (length < 2) return out;
  const auto longs = at::TensorOptions().dtype(at::kLong).device(model.device());
  const at::Tensor ids = at::tensor(prompt, at::TensorOptions().dtype(at::kLong)).to(model.device());
  const at::Tensor masks = at::full({length}, model.config().mask_token_id, longs);
  const at::Tensor columns = at::arange(length, longs).unsqueeze(0);  // [1, L]
  const std::int64_t rows_per_pass = std::max<std::int64_t>(1, scoring.tokens_per_pass / length);
  const std::int64_t shift = model.config().shifted_prediction() ? 1 : 0;
  for (std::int64_t first = 1; first < length; first += rows_per_pass) {
    const std::int64_t n = std::min(rows_per_pass, length - first);
    const at::Tensor scored = at::arange(first, first + n, longs);  // row r scores position first + r
    model::PackedSegment seg;
    seg.ids = at::where(columns < scored.unsqueeze(1), ids.unsqueeze(0), masks.unsqueeze(0));  // [n, L]
    seg.causal_block = scoring.causal_block;
    seg.attention_query_chunk = scoring.attention_query_chunk;
    const at::Tensor hidden = model.HiddenPacked({seg})[0];  // [n, L, d_model]
    const at::Tensor rows = at::arange(n, longs);
    const at::Tensor logits = model.HeadLogits(hidden.index({rows, scored - shift}));  // [n, V]
    const StepLogprobs lp = StepLogprobs::Take(logits, rows, scored, scoring.k);
    for (std::int64_t r = 0; r < n; ++r) out[static_cast<std::size_t>(first + r)] = lp.Of(r, prompt[first + r]);
  }
  return out;
}

}  // namespace unmask::sampler
