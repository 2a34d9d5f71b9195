#include "common/sampler/likelihood.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "common/sampler/sampling_ops.h"

namespace unmask::sampler {
namespace {

constexpr double kDreamSamplingEps = 1e-3;  // DreamEvalConfig.sampling_eps

}  // namespace

LikelihoodEstimator::LikelihoodEstimator(const model::LladaModel& model, std::vector<std::int64_t> ids,
                                         const generation::GenerationParams& params, std::int64_t tokens_per_pass)
    : model_(model),
      params_(*params.likelihood),
      cfg_scale_(params.cfg_scale),
      attention_query_chunk_(params.attention_query_chunk) {
  mask_id_ = model_.config().mask_token_id;
  dream_ = model_.config().shifted_prediction();
  length_ = static_cast<std::int64_t>(ids.size());
  target_ = params_.continuation_tokens;
  context_ = length_ - target_;
  const std::int64_t copies = cfg_scale_ > 0 ? 2 : 1;
  rows_per_pass_ = std::max<std::int64_t>(1, tokens_per_pass / (length_ * copies));
  gen_ = MakeSeededGenerator(at::kCPU, params.seed);  // the official draws run on the CPU generator
  seq_ = at::tensor(ids, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
}

void LikelihoodEstimator::DrawBatch() {
  const std::int64_t b = params_.batch_size, t = target_;
  const auto longs = at::TensorOptions().dtype(at::kLong);
  at::Tensor is_mask;  // [b, L] over the whole sequence
  if (!dream_) {
    // get_log_likelihood.py forward_process: the float32 arithmetic of its linspace and round.
    const std::int64_t k = at::randint(1, t + 1, {}, gen_, longs).item<std::int64_t>();
    const float end = static_cast<float>(k) + static_cast<float>((b - 1) * (static_cast<double>(t) / b));
    at::Tensor x = at::round(at::linspace(static_cast<double>(k), static_cast<double>(end), b)).to(at::kLong);
    x = at::remainder(x - 1, t) + 1;
    const at::Tensor base = at::arange(t, longs).unsqueeze(0) < x.unsqueeze(1);  // [b, T]
    std::vector<at::Tensor> rows;
    for (std::int64_t i = 0; i < b; ++i) rows.push_back(base[i].index({at::randperm(t, gen_, longs)}));
    is_mask = at::cat({at::zeros({b, context_}, at::kBool), at::stack(rows)}, 1);
    p_mask_ = x.to(at::kFloat) / static_cast<float>(t);
  } else {
    // DreamEvalHarness._forward_process over the whole sequence, then the continuation's part.
    const at::Tensor u0 = at::rand({1}, gen_, at::kFloat);
    const at::Tensor ts = at::remainder(u0 + at::arange(b, at::kFloat) / static_cast<float>(b), 1.0);
    p_mask_ = (1 - kDreamSamplingEps) * ts + kDreamSamplingEps;
    is_mask = at::rand({b, length_}, gen_, at::kFloat) < p_mask_.unsqueeze(1);
    is_mask.select(1, 0).fill_(false);
    is_mask.select(1, length_ - 1).fill_(false);
    is_mask.narrow(1, 0, context_).fill_(false);
  }
  noisy_ = at::where(is_mask, at::full({}, mask_id_, longs), seq_.expand({b, length_}));
  next_row_ = 0;
  batch_loss_ = 0;
  ++batch_;
}

at::Tensor LikelihoodEstimator::Guided(const at::Tensor& rows) const {
  if (cfg_scale_ <= 0) return rows;
  at::Tensor un = rows.clone();  // get_logits: the unconditional rows mask the context
  un.narrow(1, 0, context_).fill_(mask_id_);
  return at::cat({rows, un});
}

void LikelihoodEstimator::Guide(at::Tensor& logits, const at::Tensor& un) const {
  // GuidedLogits' un + (cfg + 1)(cond - un), in place: the same values without its copies
  // (the memory model counts a step's guidance at most at GuidedLogits' size).
  logits.sub_(un).mul_(cfg_scale_ + 1).add_(un);
}

void LikelihoodEstimator::RunRows() {
  const std::int64_t n = std::min(rows_per_pass_, params_.batch_size - next_row_);
  const at::Tensor rows = noisy_.narrow(0, next_row_, n);
  const at::Tensor masked = rows == mask_id_;  // [n, L]
  const at::Tensor where = masked.nonzero();   // [M, 2]: (row, position)
  if (where.size(0) > 0) {
    const at::Tensor r = where.select(1, 0), j = where.select(1, 1);
    model::PackedSegment seg;
    seg.ids = Guided(rows).to(model_.device());
    seg.attention_query_chunk = attention_query_chunk_;
    const at::Tensor hidden = model_.HiddenPacked({seg})[0];  // [n (x2), L, d]
    const at::Tensor read = dream_ ? at::clamp_min(j - 1, 0) : j;  // Dream: the shifted prediction
    at::Tensor logits = model_.HeadLogits(hidden.index({r.to(hidden.device()), read.to(hidden.device())}));
    if (cfg_scale_ > 0)
      Guide(logits, model_.HeadLogits(hidden.index({(r + n).to(hidden.device()), read.to(hidden.device())})));
    const at::Tensor targets = seq_.index({at::zeros_like(j), j}).to(logits.device());
    const at::Tensor nll = -at::log_softmax(logits.to(at::kFloat), -1).gather(1, targets.unsqueeze(1)).squeeze(1);
    const at::Tensor ratio = p_mask_.narrow(0, next_row_, n).index({r}).to(nll.device());
    batch_loss_ += (nll / ratio).sum().cpu().item<double>();
  }
  ++forwards_;
  next_row_ += n;
  if (next_row_ < params_.batch_size) return;
  losses_.push_back(batch_loss_ / static_cast<double>(params_.batch_size));
}

void LikelihoodEstimator::RunGreedy() {
  // eval_llada.py suffix_greedy_prediction: one token, the most confident argmax, per forward.
  if (!greedy_seq_.defined()) {
    greedy_seq_ = seq_.clone();
    greedy_seq_.narrow(1, context_, target_).fill_(mask_id_);
  }
  const at::Tensor masked = (greedy_seq_[0] == mask_id_).nonzero().squeeze(1);  // positions
  model::PackedSegment seg;
  seg.ids = Guided(greedy_seq_).to(model_.device());
  seg.attention_query_chunk = attention_query_chunk_;
  const at::Tensor hidden = model_.HiddenPacked({seg})[0];
  const at::Tensor cols = masked.to(hidden.device());
  at::Tensor logits = model_.HeadLogits(hidden[0].index({cols}));  // [M, V]
  if (cfg_scale_ > 0) Guide(logits, model_.HeadLogits(hidden[1].index({cols})));
  const at::Tensor x0 = logits.argmax(-1);
  const at::Tensor confidence = at::softmax(logits.to(at::kFloat), -1).gather(1, x0.unsqueeze(1)).squeeze(1);
  const std::int64_t best = confidence.argmax().cpu().item<std::int64_t>();
  const std::int64_t position = masked[best].item<std::int64_t>();
  const std::int64_t token = x0[best].cpu().item<std::int64_t>();
  greedy_seq_.index_put_({0, position}, token);
  ++forwards_;
  ++greedy_done_;
  // A committed token never changes: one that differs from the continuation decides the answer.
  if (token != seq_[0][position].item<std::int64_t>()) greedy_ = false;
  else if (greedy_done_ == target_) greedy_ = true;
}

void LikelihoodEstimator::Next() {
  if (done_) return;
  const std::int64_t batches = params_.mc_num / params_.batch_size;
  if (static_cast<std::int64_t>(losses_.size()) < batches) {
    if (batch_ == static_cast<std::int64_t>(losses_.size())) DrawBatch();
    RunRows();
  } else if (params_.check_greedy && !greedy_) {
    RunGreedy();
  }
  done_ = static_cast<std::int64_t>(losses_.size()) == batches && (!params_.check_greedy || greedy_.has_value());
}

LikelihoodResult LikelihoodEstimator::result() const {
  LikelihoodResult out;
  const auto n = static_cast<double>(losses_.size());
  double sum = 0;
  for (double l : losses_) sum += l;
  const double mean = n > 0 ? sum / n : 0;
  out.loglikelihood = -mean;
  if (losses_.size() > 1) {
    double squares = 0;
    for (double l : losses_) squares += (l - mean) * (l - mean);
    out.standard_error = std::sqrt(squares / (n - 1) / n);
  }
  out.greedy = greedy_;
  out.samples = static_cast<std::int64_t>(losses_.size()) * params_.batch_size;
  out.forwards = forwards_;
  out.rows_per_forward = std::min<std::int64_t>(rows_per_pass_, params_.batch_size);
  out.continuation_tokens = target_;
  return out;
}

LikelihoodResult EstimateLikelihood(const model::LladaModel& model, const std::vector<std::int64_t>& ids,
                                    const generation::GenerationParams& params, std::int64_t tokens_per_pass) {
  LikelihoodEstimator estimator(model, ids, params, tokens_per_pass);
  while (!estimator.done()) estimator.Next();
  return estimator.result();
}

}  // namespace unmask::sampler
