#include "common/sampler/fast_sampler.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include "common/sampler/block_logits_sampler.h"
#include "common/sampler/dual_cache_sampler.h"
#include "common/sampler/parallel_decoding.h"
#include "common/sampler/prefix_cache_sampler.h"
#include "common/sampler/sampling_ops.h"
#include "common/sampler/step_logprobs.h"
#include "common/sampler/transfer_schedule.h"

namespace unmask::sampler {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

std::unique_ptr<BlockForward> MakeForward(CacheKind cache) {
  switch (cache) {
    case CacheKind::kPrefix:
      return MakePrefixCacheForward();
    case CacheKind::kDual:
      return MakeDualCacheForward();
    case CacheKind::kNone:
      break;
  }
  return MakeBlockLogitsForward();
}

std::vector<double> ToDoubles(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU, at::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace


namespace {

// One fast-mode generation, a step at a time: a block at a time (EnterBlock; Advance finds the
// next step to run, as the loop of Fast-dLLM decides it), each step predicting the block's tokens
// and their confidence (Predict), picking which to unmask (PickTransfers), and stopping rows that
// finished (EarlyStop).
class FastStepSampler : public StepSampler {
 public:
  FastStepSampler(const model::LladaModel& model, SamplingStart s, const GenerationParams& p, const FastOptions& o,
                  const char* name)
      : model_(model), p_(p), o_(o), batch_(s.batch), prompt_len_(s.prompt_len), total_(s.total),
        device_(model.device()), gen_(s.gen), x_(std::move(s.x)), prompt_index_(std::move(s.prompt_index)),
        cfg_(p.cfg_scale > 0), bl_(p.block_length), early_stop_(o.early_stop && !s.canvas), done_(batch_, 0) {
    model_mask_ = cfg_ && s.attention_mask.defined() ? at::cat({s.attention_mask, s.attention_mask}, 0)
                                                     : s.attention_mask;
    num_blocks_ = p.gen_length / p.block_length;
    steps_per_block_ = p.steps / num_blocks_;
    forward_ = MakeForward(o.cache);
    reference_confidence_ = o.cache == CacheKind::kNone && o.rule == DecodeRule::kSchedule;
    result_.sampler = name;
    EnterBlock();
    Advance();
  }

  bool running() const override { return running_; }
  model::PackedSegment NextForward() override;
  StepEvent FinishStep(const at::Tensor& hidden) override;
  GenerationResult Result() const override {
    GenerationResult r = result_;
    r.output = ToRows(x_.narrow(1, prompt_len_, p_.gen_length));
    return r;
  }
  std::int64_t CacheBytes() const override { return forward_->CacheBytes(); }

 private:
  std::int64_t block_start() const { return prompt_len_ + nb_ * bl_; }
  void EnterBlock();
  bool StepDue() const;
  void Advance();
  // The step's candidate tokens x0 ([B, bl], the block's own tokens where unmasked) and the
  // confidence over the full row ([B, total], -inf outside the block and at unmasked positions).
  std::pair<at::Tensor, at::Tensor> Predict(at::Tensor hidden, const at::Tensor& xb, const at::Tensor& mask_index);
  std::pair<at::Tensor, at::Tensor> PickTokens(at::Tensor logits, const at::Tensor& mask_index, bool masked_rows_only);
  // [B, total]: the positions this step unmasks.
  at::Tensor PickTransfers(const at::Tensor& confidence, const at::Tensor& mask_index);
  void EarlyStop(const at::Tensor& xb, at::Tensor& transfer);

  const model::LladaModel& model_;
  const GenerationParams p_;
  const FastOptions o_;
  const std::int64_t batch_, prompt_len_, total_;
  const at::Device device_;
  at::Generator gen_;
  at::Tensor x_;
  const at::Tensor prompt_index_;
  at::Tensor model_mask_;
  const bool cfg_;
  const std::int64_t bl_;
  const bool early_stop_;  // o.early_stop, off with a canvas (a suffix or a template's fixed tokens stay)
  std::int64_t num_blocks_ = 0, steps_per_block_ = 0;
  std::unique_ptr<BlockForward> forward_;
  bool reference_confidence_ = false;
  GenerationResult result_;
  std::vector<char> done_;
  bool all_done_ = false, running_ = true;
  std::int64_t nb_ = 0, i_ = 0, step_ = 0;
  std::int64_t segment_offset_ = 0;  // where the last forward's hidden rows start
  std::vector<std::vector<std::int64_t>> schedule_;
  StepLogprobs lp_;  // the last step's (params.logprobs)
};

void FastStepSampler::EnterBlock() {
  schedule_.clear();
  if (o_.rule != DecodeRule::kSchedule) return;
  at::Tensor masked_in_block = x_.narrow(1, block_start(), bl_).eq(p_.mask_id).sum(1).cpu();
  for (std::int64_t r = 0; r < batch_; ++r)
    schedule_.push_back(NumTransferTokens(masked_in_block[r].item<std::int64_t>(), steps_per_block_));
}

bool FastStepSampler::StepDue() const {
  // Fast-dLLM's cache loops run at least one cached forward after a block's first step, even
  // when that step (a threshold or factor rule) unmasked the whole block: it changes nothing,
  // and it is run and counted as Fast-dLLM runs and counts it.
  const bool fast_dllm_second_forward = o_.cache != CacheKind::kNone && o_.rule != DecodeRule::kSchedule && i_ == 1;
  if (!fast_dllm_second_forward && !x_.narrow(1, block_start(), bl_).eq(p_.mask_id).any().item<bool>()) return false;
  return o_.rule != DecodeRule::kSchedule || i_ < steps_per_block_;  // the schedule empties the block first
}

void FastStepSampler::Advance() {
  while (!all_done_ && nb_ < num_blocks_) {
    if (StepDue()) return;
    ++nb_;
    i_ = 0;
    if (nb_ < num_blocks_) EnterBlock();
  }
  running_ = false;
}

model::PackedSegment FastStepSampler::NextForward() {
  at::Tensor model_x = x_;
  if (cfg_) model_x = at::cat({x_, x_.clone().masked_fill_(prompt_index_, p_.mask_id)}, 0);
  model::PackedSegment seg = forward_->Segment(model_x, model_mask_, block_start(), block_start() + bl_, i_);
  seg.attention_query_chunk = p_.attention_query_chunk;
  segment_offset_ = seg.whole ? 0 : seg.offset;
  return seg;
}

StepEvent FastStepSampler::FinishStep(const at::Tensor& hidden) {
  at::Tensor xb = x_.narrow(1, block_start(), bl_);  // a view: writes land in x
  const at::Tensor mask_index = xb.eq(p_.mask_id);  // [B, bl]
  auto [x0, confidence] = Predict(hidden.narrow(1, block_start() - segment_offset_, bl_), xb, mask_index);
  at::Tensor transfer = PickTransfers(confidence, mask_index);
  xb.copy_(at::where(transfer.narrow(1, block_start(), bl_), x0, xb));
  if (early_stop_) EarlyStop(xb, transfer);

  StepEvent ev = MakeStepEvent(transfer, x_, prompt_len_);
  lp_.Attach(ev, prompt_len_);
  ev.step = step_++;
  ev.block = nb_;
  ev.step_in_block = i_++;
  ++result_.steps_run;
  if (all_done_) {
    running_ = false;
  } else {
    Advance();
  }
  return ev;
}

std::pair<at::Tensor, at::Tensor> FastStepSampler::Predict(at::Tensor hidden, const at::Tensor& xb,
                                                           const at::Tensor& mask_index) {
  // At temperature 0 only the masked rows' logits are read (an unmasked row keeps its token
  // and gets confidence -inf), so the LM head runs over those rows alone. Without noise no
  // random draw depends on the rows' number, and each row's logits are the same bits.
  const bool masked_rows_only = p_.temperature == 0;
  if (masked_rows_only) hidden = hidden.index({cfg_ ? at::cat({mask_index, mask_index}, 0) : mask_index});
  at::Tensor logits = model_.HeadLogits(hidden);  // [B', bl, V], or [rows, V]
  if (cfg_) logits = GuidedLogits(logits, p_.cfg_scale);
  if (p_.logits_eos_inf) logits.select(-1, p_.eos_id).fill_(kNegInf);
  if (p_.logprobs >= 0 && masked_rows_only) {
    const at::Tensor where = mask_index.nonzero();
    lp_ = StepLogprobs::Take(logits, where.select(1, 0), where.select(1, 1) + block_start(), p_.logprobs);
  } else if (p_.logprobs >= 0) {
    lp_ = StepLogprobs::TakeWhere(logits, mask_index, block_start(), p_.logprobs);
  }
  auto [x0, x0_p] = PickTokens(logits, mask_index, masked_rows_only);
  x0 = masked_rows_only ? xb.masked_scatter(mask_index, x0) : at::where(mask_index, x0, xb);
  // Confidence over the full row (-inf outside the block), so that top-k sees what the
  // reference's top-k sees.
  at::Tensor confidence = at::full({batch_, total_}, kNegInf, x0_p.options());
  confidence.narrow(1, block_start(), bl_).copy_(x0_p.masked_fill(mask_index.logical_not(), kNegInf));
  return {x0, confidence};
}

// Each row's token and its confidence (float64 -inf where the row keeps its token), [B, bl];
// with masked_rows_only, x0 is [rows] over the masked rows.
std::pair<at::Tensor, at::Tensor> FastStepSampler::PickTokens(at::Tensor logits, const at::Tensor& mask_index,
                                                               bool masked_rows_only) {
  const bool greedy_f64 =
      p_.temperature == 0 && p_.remasking == Remasking::kLowConfidence && !reference_confidence_;
  at::Tensor x0, x0_p;
  std::vector<std::int64_t> excluded;
  if (p_.confidence_eos_eot_inf) excluded = {p_.eos_id, p_.eot_id};
  // Greedy on the CPU: the argmax and its float64 softmax in one pass over each row, without
  // the float64 copies of the logits (sampling_ops.h).
  if (greedy_f64 && masked_rows_only && GreedyConfidenceOnCpu(logits, excluded, &x0, &x0_p)) {
    x0_p = at::full({batch_, bl_}, kNegInf, x0_p.options()).masked_scatter_(mask_index, x0_p);
    return {x0, x0_p};
  }
  // Greedy with float64 confidences: the logits widened once, before the argmax (the same index,
  // widening is exact; ATen's argmax over bf16 is 3-5x slower than over float64 here).
  if (greedy_f64) logits = logits.to(at::kDouble);
  at::Tensor noisy = p_.temperature == 0 ? logits : AddGumbelNoise(logits, p_.temperature, gen_);
  x0 = noisy.argmax(-1);  // [B, bl], or [rows]
  if (p_.confidence_eos_eot_inf) {
    // The reference's `noisy[..., EOS] = logits[..., EoT] = -inf`, aliasing at temperature 0 included.
    noisy.select(-1, p_.eos_id).fill_(kNegInf);
    logits.select(-1, p_.eot_id).fill_(kNegInf);
  }
  if (p_.remasking == Remasking::kLowConfidence) {
    // Fast-dLLM takes this softmax in float64 (near-1 confidences stay distinct, so top-k
    // and the thresholds see what it sees); plain block_logits keeps the reference's dtype
    // so that it stays exact to the reference.
    x0_p = at::softmax(reference_confidence_ ? logits : logits.to(at::kDouble), -1)
               .gather(-1, x0.unsqueeze(-1))
               .squeeze(-1);
    if (masked_rows_only) x0_p = at::full({batch_, bl_}, kNegInf, x0_p.options()).masked_scatter_(mask_index, x0_p);
  } else {
    // The reference's draw shape, so that the generator stream stays the same.
    x0_p = at::empty({batch_, total_}, at::TensorOptions().dtype(at::kFloat).device(device_))
               .uniform_(0, 1, gen_)
               .narrow(1, block_start(), bl_);
  }
  return {x0, x0_p};
}

at::Tensor FastStepSampler::PickTransfers(const at::Tensor& confidence, const at::Tensor& mask_index) {
  // Where top-k looks, as in Fast-dLLM: the whole row at a block's first step (and without a
  // cache), the block and everything after it (prefix cache), the block alone (dual cache).
  // Ties (confidences of exactly 1.0 are common on a confident model) then break the same way.
  const std::int64_t topk_begin = i_ == 0 || o_.cache == CacheKind::kNone ? 0 : block_start();
  const std::int64_t topk_end = i_ > 0 && o_.cache == CacheKind::kDual ? block_start() + bl_ : total_;
  at::Tensor transfer = at::zeros({batch_, total_}, at::TensorOptions().dtype(at::kBool).device(device_));
  at::Tensor masked_per_row = mask_index.sum(1).cpu();
  for (std::int64_t r = 0; r < batch_; ++r) {
    const std::int64_t masked = masked_per_row[r].item<std::int64_t>();
    if (masked == 0) continue;
    std::int64_t k = 0;
    if (o_.rule == DecodeRule::kSchedule) {
      k = schedule_[r][i_];
    } else {
      at::Tensor sorted = std::get<0>(confidence[r].narrow(0, block_start(), bl_).sort(-1, /*descending=*/true));
      const std::vector<double> c = ToDoubles(sorted.narrow(0, 0, masked));
      k = o_.rule == DecodeRule::kThreshold ? ThresholdCount(c, o_.threshold) : FactorCount(c, o_.factor);
    }
    if (k == 0) continue;
    at::Tensor picked = std::get<1>(at::topk(confidence[r].narrow(0, topk_begin, topk_end - topk_begin), k)) + topk_begin;
    transfer[r].index_fill_(0, picked, true);
  }
  return transfer;
}

void FastStepSampler::EarlyStop(const at::Tensor& xb, at::Tensor& transfer) {
  const std::int64_t block_end = block_start() + bl_;
  at::Tensor block_open = xb.eq(p_.mask_id).any(1).cpu();
  at::Tensor last = xb.select(1, bl_ - 1).cpu();
  for (std::int64_t r = 0; r < batch_; ++r) {
    if (done_[r] || block_open[r].item<bool>() || last[r].item<std::int64_t>() != p_.eos_id) continue;
    done_[r] = 1;
    if (block_end < total_) {
      transfer[r].narrow(0, block_end, total_ - block_end).fill_(true);
      x_[r].narrow(0, block_end, total_ - block_end).fill_(p_.eos_id);
    }
  }
  all_done_ = std::all_of(done_.begin(), done_.end(), [](char d) { return d != 0; });
}

}  // namespace

StatusOr<std::unique_ptr<StepSampler>> StartFastStepSampler(const model::LladaModel& model, const PromptBatch& prompts,
                                                            const GenerationParams& p, const FastOptions& o,
                                                            const char* name) {
  UNMASK_ASSIGN_OR_RETURN(SamplingStart s, StartSampling(model, prompts, p));
  UNMASK_RETURN_IF_ERROR(ValidateFastOptions(o));
  try {
    return std::unique_ptr<StepSampler>(std::make_unique<FastStepSampler>(model, std::move(s), p, o, name));
  } catch (const std::exception& e) {
    return InternalError(std::string(name) + " sampler: " + e.what());
  }
}

StatusOr<GenerationResult> FastGenerate(const model::LladaModel& model, const PromptBatch& prompts,
                                        const GenerationParams& p, const FastOptions& o, const StepCallback& on_step) {
  const char* name = FastModeName(o.cache, o.rule);
  UNMASK_ASSIGN_OR_RETURN(auto sampler, StartFastStepSampler(model, prompts, p, o, name));
  return RunSteps(model, *sampler, on_step, std::string(name) + " sampler");
}

}  // namespace unmask::sampler
