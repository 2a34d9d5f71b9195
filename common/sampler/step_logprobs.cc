#include "common/sampler/step_logprobs.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace unmask::sampler {

StepLogprobs StepLogprobs::Take(const at::Tensor& logits, const at::Tensor& rows, const at::Tensor& positions, int k) {
  StepLogprobs s;
  if (k < 0) return s;
  s.k_ = k;
  s.logp_ = at::log_softmax(logits.to(at::kFloat), -1).cpu();
  const std::int64_t keep = std::min<std::int64_t>(k, s.logp_.size(-1));
  if (keep > 0 && s.logp_.size(0) > 0) {
    auto [values, ids] = at::topk(s.logp_, keep, -1);  // sorted, most likely first
    s.top_values_ = values;
    s.top_ids_ = ids;
  }
  const at::Tensor r = rows.to(at::kLong).cpu(), p = positions.to(at::kLong).cpu();
  for (std::int64_t i = 0; i < r.size(0); ++i) s.index_[{r[i].item<std::int64_t>(), p[i].item<std::int64_t>()}] = i;
  return s;
}

StepLogprobs StepLogprobs::TakeWhere(const at::Tensor& logits, const at::Tensor& where, std::int64_t offset, int k) {
  if (k < 0) return {};
  const at::Tensor at_ = where.nonzero();  // [n, 2]: row, position in the window
  const at::Tensor rows = at_.select(1, 0), cols = at_.select(1, 1);
  return Take(logits.index({rows, cols}), rows, cols + offset, k);
}

void StepLogprobs::Attach(StepEvent& ev, std::int64_t prompt_len) const {
  if (k_ < 0) return;
  ev.logprobs.assign(ev.positions.size(), {});
  for (std::size_t r = 0; r < ev.positions.size(); ++r) {
    for (std::size_t j = 0; j < ev.positions[r].size(); ++j) {
      const std::int64_t token = ev.tokens[r][j];
      const auto found = index_.find({static_cast<std::int64_t>(r), ev.positions[r][j] + prompt_len});
      ev.logprobs[r].push_back(found != index_.end() ? Of(found->second, token) : TokenLogprob{token, 0.0, {}});
    }
  }
}

TokenLogprob StepLogprobs::Of(std::int64_t i, std::int64_t token) const {
  TokenLogprob lp;
  lp.token = token;
  const at::Tensor row = logp_[i];
  lp.logprob = row[token].item<double>();
  lp.rank = (row > row[token]).sum().item<std::int64_t>() + 1;
  for (std::int64_t t = 0; top_ids_.defined() && t < top_ids_.size(1); ++t)
    lp.top.emplace_back(top_ids_[i][t].item<std::int64_t>(), top_values_[i][t].item<double>());
  return lp;
}

void RecordLogprobs(const StepEvent& event, std::vector<std::vector<std::optional<TokenLogprob>>>& into) {
  if (event.logprobs.empty()) return;
  if (into.size() < event.logprobs.size()) into.resize(event.logprobs.size());
  for (std::size_t r = 0; r < event.logprobs.size(); ++r) {
    for (std::size_t j = 0; j < event.logprobs[r].size(); ++j) {
      const auto position = static_cast<std::size_t>(event.positions[r][j]);
      if (into[r].size() <= position) into[r].resize(position + 1);
      into[r][position] = event.logprobs[r][j];
    }
  }
}

void FinishLogprobs(const std::vector<std::vector<std::int64_t>>& output,
                    std::vector<std::vector<std::optional<TokenLogprob>>>& logprobs) {
  for (std::size_t r = 0; r < logprobs.size() && r < output.size(); ++r) {
    logprobs[r].resize(output[r].size());
    for (std::size_t i = 0; i < output[r].size(); ++i) {
      auto& lp = logprobs[r][i];
      if (lp && lp->token != output[r][i]) lp = TokenLogprob{output[r][i], 0.0, {}};
    }
  }
}

}  // namespace unmask::sampler
