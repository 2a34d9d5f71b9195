// Log-probabilities of a prompt's own tokens (GenerationParams::prompt_logprobs, the HTTP API's
// `echo` with `logprobs`). A masked diffusion model predicts masked positions, not the next
// token, so token j is scored as the model would place it: the prompt's tokens before j given,
// positions j .. L-1 masked (the sequence's length known, as in generation), and the model's
// distribution at position j read (Dream: at j - 1, its shifted prediction). Summed over any
// continuation this is Dream's official "ar_ftb" likelihood (dllm's DreamEvalHarness,
// nll_type ar_ftb, log_type ftb) for every split of the prompt into context and continuation; for
// the last token it is also the official LLaDA get_log_likelihood() with that token as the
// answer (one Monte Carlo sample is exact there). Deterministic: no sampling, no guidance.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "common/generation/params.h"
#include "common/model/llada_model.h"
#include "common/sampler/step_event.h"

namespace unmask::sampler {

struct PromptScoring {
  int k = 0;                              // alternatives per token (0..20)
  std::int64_t causal_block = 0;          // LLaDA2's block-causal attention: its block length; 0 = bidirectional
  std::int64_t tokens_per_pass = 0;       // rows x length of one forward; at least one row runs
  std::int64_t attention_query_chunk = 0;  // PackedSegment::attention_query_chunk
};

// How a job scores its prompt: params.prompt_logprobs alternatives, the model's attention (LLaDA2
// models: blocks of params.block_length), forwards no larger than the job's own
// (`sequence_length` tokens, doubled with guidance), so the memory the scheduler planned holds.
PromptScoring ScoringFor(const model::LladaModel& model, const generation::GenerationParams& params,
                         std::int64_t sequence_length);

// Scores a prompt one forward at a time, so that an executor can step its other jobs between
// them: the L - 1 rows of length L in forwards of at most tokens_per_pass tokens (one row at least).
class PromptScorer {
 public:
  PromptScorer(const model::LladaModel& model, std::vector<std::int64_t> prompt, const PromptScoring& scoring);

  bool done() const { return next_ >= static_cast<std::int64_t>(prompt_.size()); }
  // Runs the next forward (nothing once done).
  void Next();
  std::int64_t forwards() const { return forwards_; }
  // One entry per prompt token: entry 0 empty (nothing comes before it: OpenAI and vLLM report
  // none for the first token either), entry j the log-probability of prompt[j] and the k most
  // likely tokens at j (empty until its forward ran).
  const std::vector<std::optional<TokenLogprob>>& result() const { return out_; }

 private:
  const model::LladaModel& model_;
  std::vector<std::int64_t> prompt_;
  PromptScoring scoring_;
  std::int64_t rows_per_pass_ = 1, next_ = 1, forwards_ = 0;
  at::Tensor ids_, masks_, columns_;  // the prompt, as many masks, 0..L-1 ([1, L]): made once
  std::vector<std::optional<TokenLogprob>> out_;
};

// PromptScorer's result, every forward run.
std::vector<std::optional<TokenLogprob>> PromptLogprobs(const model::LladaModel& model,
                                                        const std::vector<std::int64_t>& prompt,
                                                        const PromptScoring& scoring);

}  // namespace unmask::sampler
