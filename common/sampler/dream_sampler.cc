#include "common/sampler/dream_sampler.h"

#include <ATen/ATen.h>

#include <limits>
#include <string>
#include <utility>

#include "common/model/llada_model.h"
#include "common/sampler/dream_sampling.h"
#include "common/sampler/sampling_ops.h"
#include "common/sampler/step_logprobs.h"

namespace unmask::sampler {
namespace {

using generation::DreamAlg;
using dream::SampleTokens;

class DreamStepSampler : public StepSampler {
 public:
  DreamStepSampler(const model::LladaModel& model, SamplingStart start, const GenerationParams& p)
      : model_(model), p_(p), s_(std::move(start)) {
    timesteps_ = at::linspace(1, p.eps, p.steps + 1, at::TensorOptions().dtype(at::kFloat));
    if (s_.attention_mask.defined()) {  // diffusion_generate's tok_idx: cumsum - 1, pads at 1
      const at::Tensor mask = s_.attention_mask.to(at::kLong);
      positions_ = (mask.cumsum(-1) - 1).masked_fill(mask.eq(0), 1);
    }
    result_.sampler = "dream";
  }

  bool running() const override { return step_ < p_.steps; }

  model::PackedSegment NextForward() override {
    model::PackedSegment seg;
    seg.ids = s_.x;
    seg.attention_mask = s_.attention_mask;
    seg.position_ids = positions_;
    seg.attention_query_chunk = p_.attention_query_chunk;
    return seg;
  }

  StepEvent FinishStep(const at::Tensor& hidden) override;

  GenerationResult Result() const override {
    GenerationResult r = result_;
    r.output = ToRows(s_.x.narrow(1, s_.prompt_len, p_.gen_length));
    return r;
  }
  std::int64_t CacheBytes() const override { return 0; }

 private:
  // The logits every masked position reads ([masked, V] float32, in row-major order of x): those
  // of the position to its left, position 0 its own.
  at::Tensor MaskedLogits(const at::Tensor& hidden, const at::Tensor& masked) const;
  // origin: which masked positions commit this step, and their tokens (the mask id elsewhere).
  at::Tensor OriginStep(const at::Tensor& logits, const at::Tensor& masked);
  at::Tensor ConfidenceStep(const at::Tensor& logits, const at::Tensor& masked);

  const model::LladaModel& model_;
  const GenerationParams p_;
  SamplingStart s_;
  at::Tensor timesteps_, positions_;
  std::int64_t step_ = 0;
  GenerationResult result_;
};

at::Tensor DreamStepSampler::MaskedLogits(const at::Tensor& hidden, const at::Tensor& masked) const {
  const at::Tensor where = masked.nonzero();  // [n, 2]: row, position
  const at::Tensor rows = where.select(1, 0);
  const at::Tensor source = (where.select(1, 1) - 1).clamp_min(0);
  const at::Tensor h = hidden.index({rows, source});  // [n, d_model]
  return model_.HeadLogits(h).to(at::kFloat);
}

at::Tensor DreamStepSampler::OriginStep(const at::Tensor& logits, const at::Tensor& masked) {
  const at::Tensor t = timesteps_[step_], s = timesteps_[step_ + 1];
  const std::int64_t n = logits.size(0);
  at::Tensor x0 = at::full({n}, p_.mask_id, at::TensorOptions().dtype(at::kLong).device(logits.device()));
  const at::Tensor u = at::rand({n}, s_.gen, at::TensorOptions().dtype(at::kFloat).device(logits.device()));
  const at::Tensor chosen = step_ < p_.steps - 1 ? u.lt(1 - s / t) : u.lt(1);
  const at::Tensor index = chosen.nonzero().squeeze(-1);
  if (index.numel() > 0) x0.index_put_({index}, SampleTokens(logits.index_select(0, index), p_, p_.alg, s_.gen).first);
  at::Tensor placed = at::full_like(s_.x, p_.mask_id);
  placed.masked_scatter_(masked, x0);
  return placed;
}

at::Tensor DreamStepSampler::ConfidenceStep(const at::Tensor& logits, const at::Tensor& masked) {
  auto [x0, confidence] = SampleTokens(logits, p_, p_.alg, s_.gen);
  const at::Tensor t = timesteps_[step_], s = timesteps_[step_ + 1];
  // num_mask_token = mask_index.sum() / batch, in float32, times (1 - s/t) in float32, truncated.
  const at::Tensor per_row = masked.sum().to(at::kFloat) / static_cast<double>(masked.size(0));
  const std::int64_t k = step_ < p_.steps - 1 ? static_cast<std::int64_t>((per_row * (1 - s / t)).item<float>())
                                              : static_cast<std::int64_t>(per_row.item<float>());
  at::Tensor placed = at::full_like(s_.x, p_.mask_id);
  if (k <= 0) return placed;
  at::Tensor full = at::full(s_.x.sizes(), -std::numeric_limits<float>::infinity(),
                             at::TensorOptions().dtype(at::kFloat).device(logits.device()));
  full.masked_scatter_(masked, confidence.to(at::kFloat));
  at::Tensor chosen;
  if (p_.alg_temp > 0) {
    chosen = at::multinomial(at::softmax(full / p_.alg_temp, -1), k, /*replacement=*/false, s_.gen);
  } else {
    chosen = std::get<1>(at::topk(full, k));
  }
  at::Tensor candidates = at::full_like(s_.x, p_.mask_id);
  candidates.masked_scatter_(masked, x0);
  placed.scatter_(1, chosen, candidates.gather(1, chosen));
  return placed;
}

StepEvent DreamStepSampler::FinishStep(const at::Tensor& hidden) {
  const at::Tensor masked = s_.x.eq(p_.mask_id);
  StepLogprobs lp;
  at::Tensor placed;
  if (!masked.any().item<bool>()) {
    placed = at::full_like(s_.x, p_.mask_id);
  } else {
    const at::Tensor logits = MaskedLogits(hidden, masked);
    if (p_.logprobs >= 0) {
      const at::Tensor where = masked.nonzero();
      lp = StepLogprobs::Take(logits, where.select(1, 0), where.select(1, 1), p_.logprobs);
    }
    placed = p_.alg == DreamAlg::kOrigin ? OriginStep(logits, masked) : ConfidenceStep(logits, masked);
  }
  // A position given the mask token itself stays masked, to be predicted again.
  const at::Tensor set = placed.ne(p_.mask_id);
  s_.x = at::where(set, placed, s_.x);
  StepEvent ev = MakeStepEvent(set, s_.x, s_.prompt_len);
  lp.Attach(ev, s_.prompt_len);
  ev.step = step_;
  ev.step_in_block = step_;
  ++step_;
  ++result_.steps_run;
  return ev;
}

}  // namespace

StatusOr<std::unique_ptr<StepSampler>> StartDreamStepSampler(const model::LladaModel& model, const PromptBatch& prompts,
                                                             const GenerationParams& params) {
  UNMASK_ASSIGN_OR_RETURN(SamplingStart start, StartSampling(model, prompts, params));
  try {
    return std::unique_ptr<StepSampler>(std::make_unique<DreamStepSampler>(model, std::move(start), params));
  } catch (const std::exception& e) {
    return InternalError(std::string("dream sampler: ") + e.what());
  }
}

}  // namespace unmask::sampler
