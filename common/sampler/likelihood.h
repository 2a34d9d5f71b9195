// The official Monte Carlo estimate of a continuation's log-likelihood given a context
// (GenerationParams::likelihood; lm-evaluation-harness's loglikelihood requests), as the official
// evaluation code computes it:
//  - LLaDA and LLaDA-MoE: ML-GSAI/LLaDA get_log_likelihood.py get_log_likelihood() (also
//    eval_llada.py's get_loglikelihood, and dllm's MDLMEvalHarness): mc_num / batch_size batches;
//    in each, k ~ U{1..T} (T continuation tokens) and row i masks x_i = round(linspace(k, k + (b -
//    1) T / b))[i] wrapped into 1..T of the continuation's positions, chosen by a random
//    permutation; the loss is the cross-entropy at the masked positions divided by x_i / T, summed
//    and divided by b; the estimate is minus the batches' mean. Guidance (cfg_scale) as its
//    get_logits: the unconditional rows mask the context.
//  - Dream: dllm's DreamEvalHarness._eval_target_nll_mc (nll_type mc, log_type ftb): row i's mask
//    ratio p_i = (1 - eps) ((u + i / b) mod 1) + eps (eps 1e-3, u ~ U[0, 1)), each continuation
//    position masked when a uniform draw is below p_i (the sequence's first and last positions
//    never), the logits read one position left (Dream's shifted prediction), the loss divided by
//    p_i. No guidance.
// With check_greedy (LLaDA only), also eval_llada.py's suffix_greedy_prediction: from the context
// and T masks, T forwards each commit the single most confident argmax; true when the result is
// the continuation (lm-evaluation-harness's is_greedy).
// The random draws are those of torch's generator seeded with the job's seed, in the official
// order, so a seed gives the official code's value after torch.manual_seed(seed).
// LLaDA2 models are refused (generation::ValidateLikelihood): no official estimator exists for
// block-causal attention. The caller checks the parameters first.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "common/generation/params.h"
#include "common/model/llada_model.h"
#include "common/sampler/likelihood_result.h"
#include "common/util/status.h"

namespace unmask::sampler {

// Runs one forward per Next(), so that an executor steps its other jobs in between: each batch's
// rows in forwards of at most `tokens_per_pass` tokens (one row at least; doubled with guidance),
// then the greedy check's forwards.
class LikelihoodEstimator {
 public:
  // `ids`: context then continuation (params.likelihood->continuation_tokens of them).
  LikelihoodEstimator(const model::LladaModel& model, std::vector<std::int64_t> ids,
                      const generation::GenerationParams& params, std::int64_t tokens_per_pass);

  bool done() const { return done_; }
  void Next();
  LikelihoodResult result() const;

 private:
  void DrawBatch();
  void RunRows();
  void RunGreedy();
  at::Tensor Guided(const at::Tensor& rows) const;  // rows, then with guidance their unconditional copies
  void Guide(at::Tensor& logits, const at::Tensor& un) const;  // guidance over the conditional logits, in place

  const model::LladaModel& model_;
  generation::LikelihoodParams params_;
  double cfg_scale_ = 0;
  std::int64_t attention_query_chunk_ = 0;
  std::int64_t mask_id_ = 0, length_ = 0, context_ = 0, target_ = 0, rows_per_pass_ = 1;
  bool dream_ = false, done_ = false;
  at::Generator gen_;
  at::Tensor seq_;                      // [1, L]
  at::Tensor noisy_, p_mask_;           // the batch drawn: [b, L] ids and [b] mask ratios
  std::int64_t batch_ = 0, next_row_ = 0;  // batches drawn, the next row of the current one
  double batch_loss_ = 0;
  std::vector<double> losses_;          // one per finished batch
  at::Tensor greedy_seq_;               // [1, L]: the greedy check's canvas
  std::int64_t greedy_done_ = 0;
  std::optional<bool> greedy_;
  std::int64_t forwards_ = 0;
};

// LikelihoodEstimator's result, every forward run.
LikelihoodResult EstimateLikelihood(const model::LladaModel& model, const std::vector<std::int64_t>& ids,
                                    const generation::GenerationParams& params, std::int64_t tokens_per_pass);

}  // namespace unmask::sampler
