#include "common/sampler/dream_cache_sampler.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "common/model/llada_model.h"
#include "common/sampler/dream_sampling.h"
#include "common/sampler/sampling_ops.h"
#include "common/sampler/step_logprobs.h"

namespace unmask::sampler {
namespace {

using generation::CacheKind;
using generation::DreamAlg;

// dllm's get_num_transfer_tokens (not stochastic) with its LinearAlphaScheduler, for one row of
// `masks` masked positions: step j of `steps` goes from t = (steps - j) / steps to s = t - 1/steps
// (doubles), ratio = (1 - alpha(s)) / (1 - alpha(t)) with alpha(u) = 1 - u all in float32, and
// commits round_half_even(remaining * (1 - ratio)) in float64, capped at what remains; it stops
// once nothing remains. The zeros are dropped (the official compaction).
std::vector<std::int64_t> FastdllmSchedule(std::int64_t masks, std::int64_t steps) {
  std::vector<std::int64_t> counts;
  std::int64_t remaining = masks;
  for (std::int64_t j = 0; j < steps && remaining > 0; ++j) {
    const auto t = static_cast<float>(static_cast<double>(steps - j) / static_cast<double>(steps));
    const auto s = static_cast<float>(static_cast<double>(steps - 1 - j) / static_cast<double>(steps));
    const float alpha_s = 1.0F - s, alpha_t = 1.0F - t;
    const float ratio = (1.0F - alpha_s) / (1.0F - alpha_t);
    const double x = static_cast<double>(remaining) * (1.0 - static_cast<double>(ratio));
    const std::int64_t n = std::min(static_cast<std::int64_t>(std::nearbyint(x)), remaining);  // half-even
    remaining -= n;
    if (n > 0) counts.push_back(n);
  }
  return counts;
}

class DreamCacheStepSampler : public StepSampler {
 public:
  DreamCacheStepSampler(const model::LladaModel& model, const PromptBatch& prompts, const GenerationParams& p,
                        const DreamCacheOptions& o)
      : model_(model), p_(p), o_(o), gen_(MakeSeededGenerator(model.device(), p.seed)) {
    InitialSequence seq = MakeInitialSequence(prompts.ids, prompts.attention_mask, p.gen_length, p.mask_id,
                                              model.device(), prompts.canvas);
    x_ = std::move(seq.x);
    attention_mask_ = std::move(seq.attention_mask);
    batch_ = x_.size(0);
    total_ = x_.size(1);
    gen_start_ = static_cast<std::int64_t>(prompts.ids[0].size());
    if (o.cache == CacheKind::kNone) {
      // Per row, over every masked position of the canvas (masks inside a prompt count too).
      const at::Tensor masks = x_.eq(p.mask_id).sum(1).cpu();
      for (std::int64_t r = 0; r < batch_; ++r) schedule_.push_back(FastdllmSchedule(masks[r].item<std::int64_t>(), p.steps));
      for (const auto& row : schedule_) calls_ = std::max<std::int64_t>(calls_, static_cast<std::int64_t>(row.size()));
      for (auto& row : schedule_) row.resize(static_cast<std::size_t>(calls_), 0);  // right-padded with 0
    } else {
      num_blocks_ = p.gen_length / p.block_length;
      steps_per_block_ = p.steps / num_blocks_;
      timesteps_ = at::linspace(1, p.eps, steps_per_block_ + 1, at::TensorOptions().dtype(at::kFloat));
    }
    result_.sampler = DreamCacheModeName(o);
  }

  bool running() const override { return running_; }

  // The whole canvas (no cache, or a block's refresh call, which refills the cache), else the
  // region of the block's inner calls against the cache.
  model::PackedSegment NextForward() override {
    model::PackedSegment seg;
    seg.attention_query_chunk = p_.attention_query_chunk;
    const bool cached = o_.cache != CacheKind::kNone;
    seg.cache = cached ? &cache_ : nullptr;
    if (!cached || inner_step_ == 0) {
      seg.ids = x_;
      seg.attention_mask = attention_mask_;
      return seg;
    }
    seg.whole = false;
    seg.offset = BlockStart();
    seg.ids = Region();
    return seg;
  }

  StepEvent FinishStep(const at::Tensor& hidden) override;

  GenerationResult Result() const override {
    GenerationResult r = result_;
    r.output = ToRows(x_.narrow(1, gen_start_, p_.gen_length));
    return r;
  }
  std::int64_t CacheBytes() const override { return cache_.Bytes(); }

 private:
  std::int64_t BlockStart() const { return gen_start_ + block_ * p_.block_length; }
  // The positions an inner call runs: from the block's start to the end of the canvas (prefix)
  // or to the block's end (dual). A view: writes land in x_.
  at::Tensor Region() const {
    const std::int64_t start = BlockStart();
    return x_.narrow(1, start, o_.cache == CacheKind::kDual ? p_.block_length : total_ - start);
  }
  std::int64_t BlockMasks() const {
    return x_.narrow(1, BlockStart(), p_.block_length).eq(p_.mask_id).sum().item<std::int64_t>();
  }

  // Samples the candidates `cand` ([B, W]) of a forward over W positions from `offset` (hidden
  // [B, W, d]): each reads the logits of the position to its left in the forward (its first row
  // its own). Returns the tokens (the mask id elsewhere) and confidences (-inf elsewhere), [B, W]
  // each; with params.logprobs the candidates' log-probabilities go to lp_.
  std::pair<at::Tensor, at::Tensor> Sample(const at::Tensor& hidden, const at::Tensor& cand, DreamAlg alg,
                                           std::int64_t offset);
  // Threshold rule over conf [1, W]: the top k, of which the first and every one >= threshold.
  at::Tensor ThresholdPick(const at::Tensor& conf, std::int64_t k, const at::Tensor& cand) const;
  // The calls of each mode; they commit into x_ and return whether the generation (no cache) or
  // the block (cache) must stop early.
  bool NoCacheCall(const at::Tensor& hidden);
  void RefreshCall(const at::Tensor& hidden);
  // The refresh call's one committed position per row (`start`), from its logits [B, V].
  void TakeRefreshLogprobs(const at::Tensor& logits, std::int64_t start) {
    if (p_.logprobs < 0) return;
    const at::Tensor rows = at::arange(batch_, logits.options().dtype(at::kLong));
    lp_ = StepLogprobs::Take(logits, rows, at::full_like(rows, start), p_.logprobs);
  }
  bool InnerCall(const at::Tensor& hidden);
  // After a cache-mode call: the next inner call, or the next block's refresh, or the end.
  void AdvanceBlock(bool block_over);

  const model::LladaModel& model_;
  const GenerationParams p_;
  const DreamCacheOptions o_;
  at::Generator gen_;
  at::Tensor x_;               // [B, T]: the canvas
  at::Tensor attention_mask_;  // [B, T] or undefined (no padding)
  std::int64_t batch_ = 0, total_ = 0, gen_start_ = 0;
  std::vector<std::vector<std::int64_t>> schedule_;  // no cache: [B][calls_]
  std::int64_t calls_ = 0;                           // no cache: the schedule's length
  std::int64_t num_blocks_ = 0, steps_per_block_ = 0, block_ = 0;
  std::int64_t inner_step_ = 0;  // cache: 0 = the block's refresh call comes next
  at::Tensor timesteps_;         // cache, schedule: linspace(1, eps, steps_per_block + 1), float32
  model::KvCache cache_;
  std::int64_t call_ = 0;
  bool running_ = true;
  GenerationResult result_;
  StepLogprobs lp_;  // the current call's (params.logprobs)
};

std::pair<at::Tensor, at::Tensor> DreamCacheStepSampler::Sample(const at::Tensor& hidden, const at::Tensor& cand,
                                                                 DreamAlg alg, std::int64_t offset) {
  at::Tensor tokens = at::full_like(cand, p_.mask_id, at::kLong);
  at::Tensor conf = at::full(cand.sizes(), -std::numeric_limits<float>::infinity(),
                             at::TensorOptions().dtype(at::kFloat).device(cand.device()));
  const at::Tensor where = cand.nonzero();  // [n, 2]: row, position, row-major
  if (where.size(0) == 0) return {tokens, conf};
  at::Tensor source = where.select(1, 1);
  if (o_.right_shift_logits) source = (source - 1).clamp_min(0);
  const at::Tensor logits = model_.HeadLogits(hidden.index({where.select(1, 0), source})).to(at::kFloat);
  if (p_.logprobs >= 0) lp_ = StepLogprobs::Take(logits, where.select(1, 0), where.select(1, 1) + offset, p_.logprobs);
  auto [x0, c] = dream::SampleTokens(logits, p_, alg, gen_);
  tokens.masked_scatter_(cand, x0);
  conf.masked_scatter_(cand, c.to(at::kFloat));
  return {tokens, conf};
}

at::Tensor DreamCacheStepSampler::ThresholdPick(const at::Tensor& conf, std::int64_t k, const at::Tensor& cand) const {
  at::Tensor transfer = at::zeros_like(cand);
  if (k <= 0) return transfer;
  auto [top, index] = at::topk(conf, k);
  // Dropped only when strictly below (the official `if conf < threshold: False`); the first stays.
  at::Tensor keep = top[0].lt(p_.threshold).logical_not();
  keep[0] = true;
  transfer[0].index_fill_(0, index[0].masked_select(keep), true);
  return transfer.logical_and(cand);
}

bool DreamCacheStepSampler::NoCacheCall(const at::Tensor& hidden) {
  const at::Tensor cand = x_.eq(p_.mask_id);
  if (o_.threshold_rule) {
    auto [tokens, conf] = Sample(hidden, cand, DreamAlg::kMaskgitPlus, 0);
    // The schedule's count of this call plus the leftovers: all masks but what later calls take.
    const auto& row = schedule_[0];
    const bool last = call_ + 1 >= calls_;
    const std::int64_t later = last ? 0 : std::accumulate(row.begin() + call_ + 1, row.end(), std::int64_t{0});
    const at::Tensor transfer = ThresholdPick(conf, cand.sum().item<std::int64_t>() - later, cand);
    x_.copy_(at::where(transfer, tokens, x_));
    // At temperature 0 a last-budget call that commits nothing would repeat itself forever.
    const bool stalled = last && p_.temperature == 0 && !transfer.logical_and(tokens.ne(p_.mask_id)).any().item<bool>();
    return stalled || !x_.eq(p_.mask_id).any().item<bool>();
  }
  auto [tokens, conf] = Sample(hidden, cand, p_.alg, 0);
  for (std::int64_t r = 0; r < batch_; ++r) {
    const std::int64_t k = schedule_[static_cast<std::size_t>(r)][static_cast<std::size_t>(call_)];
    if (k <= 0) continue;
    // One row at a time, as the official loop (its topk tie order and its draws).
    const at::Tensor index = p_.alg_temp > 0
                                 ? at::multinomial(at::softmax(conf[r] / p_.alg_temp, -1), k, /*replacement=*/false, gen_)
                                 : std::get<1>(at::topk(conf[r], k));
    x_[r].index_put_({index}, tokens[r].index_select(0, index));
  }
  return call_ + 1 >= calls_;
}

void DreamCacheStepSampler::RefreshCall(const at::Tensor& hidden) {
  const std::int64_t start = BlockStart();
  const std::int64_t source = o_.right_shift_logits ? std::max<std::int64_t>(start - 1, 0) : start;
  at::Tensor token;
  if (p_.temperature > 0) {
    // The official samples the whole (shifted) canvas: one Categorical draw per position of the
    // batch, in row-major order, so every row's logits are needed for the draws to line up.
    at::Tensor logits = model_.HeadLogits(hidden).to(at::kFloat);  // [B, T, V]
    if (o_.right_shift_logits) logits = at::cat({logits.narrow(1, 0, 1), logits.narrow(1, 0, total_ - 1)}, 1);
    TakeRefreshLogprobs(logits.select(1, start), start);
    const at::Tensor x0 = dream::SampleTokens(logits.reshape({batch_ * total_, -1}), p_, DreamAlg::kMaskgitPlus, gen_).first;
    token = x0.view({batch_, total_}).select(1, start);
  } else {
    // Greedy: no draws, each row's token depends on its own logits only.
    const at::Tensor logits = model_.HeadLogits(hidden.select(1, source)).to(at::kFloat);  // [B, V]
    TakeRefreshLogprobs(logits, start);
    token = dream::SampleTokens(logits, p_, DreamAlg::kMaskgitPlus, gen_).first;
  }
  // A template's fixed token at the block's start stays (the official canvas has none there).
  at::Tensor first = x_.select(1, start);
  first.copy_(at::where(first.eq(p_.mask_id), token, first));
}

bool DreamCacheStepSampler::InnerCall(const at::Tensor& hidden) {
  at::Tensor region = Region();
  const std::int64_t width = region.size(1);
  at::Tensor cand = region.eq(p_.mask_id);
  if (width > p_.block_length) cand.narrow(1, p_.block_length, width - p_.block_length).fill_(false);
  if (o_.threshold_rule) {
    auto [tokens, conf] = Sample(hidden, cand, DreamAlg::kMaskgitPlus, BlockStart());
    const at::Tensor transfer = ThresholdPick(conf, BlockMasks(), cand);
    region.copy_(at::where(transfer, tokens, region));
    // At temperature 0 a call that commits nothing would repeat itself forever.
    return p_.temperature == 0 && !transfer.logical_and(tokens.ne(p_.mask_id)).any().item<bool>();
  }
  auto [tokens, conf] = Sample(hidden, cand, p_.alg, BlockStart());
  if (inner_step_ == steps_per_block_) return true;  // the official break, after the call and its draws
  // num_mask_token = the block's masks averaged over the batch, float32, times (1 - s/t), truncated.
  const at::Tensor per_row = cand.sum().to(at::kFloat) / static_cast<double>(batch_);
  const at::Tensor t = timesteps_[inner_step_], s = timesteps_[inner_step_ + 1];
  const std::int64_t k = inner_step_ < steps_per_block_ - 1
                             ? static_cast<std::int64_t>((per_row * (1 - s / t)).item<float>())
                             : static_cast<std::int64_t>(per_row.item<float>());
  if (k <= 0) return false;
  const at::Tensor index = p_.alg_temp > 0
                               ? at::multinomial(at::softmax(conf / p_.alg_temp, -1), k, /*replacement=*/false, gen_)
                               : std::get<1>(at::topk(conf, k));
  const at::Tensor transfer = at::zeros_like(cand).scatter_(1, index, true).logical_and(cand);
  region.copy_(at::where(transfer, tokens, region));
  return false;
}

void DreamCacheStepSampler::AdvanceBlock(bool block_over) {
  ++inner_step_;
  if (inner_step_ > 1 && (block_over || BlockMasks() == 0)) {
    ++block_;
    inner_step_ = 0;
    running_ = block_ < num_blocks_;
  }
}

StepEvent DreamCacheStepSampler::FinishStep(const at::Tensor& hidden) {
  const at::Tensor before = x_.eq(p_.mask_id);
  const std::int64_t block = block_, step_in_block = o_.cache == CacheKind::kNone ? call_ : inner_step_;
  if (o_.cache == CacheKind::kNone) {
    running_ = !NoCacheCall(hidden);
  } else if (inner_step_ == 0) {
    RefreshCall(hidden);
    AdvanceBlock(false);
  } else {
    AdvanceBlock(InnerCall(hidden));
  }
  // The positions this call unmasked (a position given the mask id itself stays masked).
  StepEvent ev = MakeStepEvent(before.logical_and(x_.ne(p_.mask_id)), x_, gen_start_);
  lp_.Attach(ev, gen_start_);
  lp_ = StepLogprobs();
  ev.step = call_++;
  ev.block = block;
  ev.step_in_block = step_in_block;
  ++result_.steps_run;
  return ev;
}

Status CheckOptions(const PromptBatch& prompts, const GenerationParams& p, const DreamCacheOptions& o,
                    const checkpoint::LladaConfig& config) {
  // Dream's shared rules (lengths, temperature, top_p, top_k, alg_temp, eps, threshold, ids, the
  // model's length); the blocks are this sampler's own.
  GenerationParams shared = p;
  shared.sampler = generation::SamplerMode::kDream;
  shared.block_length = p.gen_length;
  const auto context = static_cast<std::int64_t>(prompts.ids[0].size() + prompts.canvas.suffix.size());
  UNMASK_RETURN_IF_ERROR(ValidateParams(shared, config, context));
  UNMASK_RETURN_IF_ERROR(ValidateCanvas(prompts.canvas, p.gen_length, config.embedding_size, p.mask_id));
  if (!o.threshold_rule && p.alg == DreamAlg::kOrigin)
    return InvalidFieldError("alg", "Fast-dLLM's Dream sampler takes maskgit_plus, topk_margin or entropy (the "
                                    "official code raises 'Unknown alg' for origin)");
  const std::size_t batch = prompts.ids.size();
  if (o.threshold_rule && batch > 1)
    return InvalidFieldError("prompts", "the threshold rule takes one prompt (the official loop commits row 0 only and "
                                        "never ends with more), got " + std::to_string(batch));
  if (o.cache == CacheKind::kNone) return OkStatus();
  bool padded = false;
  for (const auto& row : prompts.attention_mask) padded |= std::find(row.begin(), row.end(), 0) != row.end();
  if (padded)
    return InvalidFieldError("prompts", "a cache needs prompts of one length (no padding): the official code slices "
                                        "the padding mask to a length that no longer matches the keys");
  if (o.cache == CacheKind::kDual && batch > 1)
    return InvalidFieldError("prompts", "the dual cache takes one prompt (the official in-place K/V update fails with "
                                        "more), got " + std::to_string(batch));
  if (p.block_length < 1 || p.gen_length % p.block_length != 0)
    return InvalidFieldError("block_length", "must divide gen_length (" + std::to_string(p.gen_length) + "), got " +
                                                 std::to_string(p.block_length));
  const std::int64_t num_blocks = p.gen_length / p.block_length;
  if (p.steps % num_blocks != 0)
    return InvalidFieldError("steps", "must be a multiple of the number of blocks (gen_length / block_length = " +
                                          std::to_string(num_blocks) + "), got " + std::to_string(p.steps));
  return OkStatus();
}

}  // namespace

const char* DreamCacheModeName(const DreamCacheOptions& o) {
  switch (o.cache) {
    case CacheKind::kPrefix:
      return o.threshold_rule ? "dream_prefix_cache+threshold" : "dream_prefix_cache";
    case CacheKind::kDual:
      return o.threshold_rule ? "dream_dual_cache+threshold" : "dream_dual_cache";
    case CacheKind::kNone:
      break;
  }
  return o.threshold_rule ? "dream_fastdllm+threshold" : "dream_fastdllm";
}

StatusOr<std::unique_ptr<StepSampler>> StartDreamCacheStepSampler(const model::LladaModel& model,
                                                                  const PromptBatch& prompts,
                                                                  const GenerationParams& params,
                                                                  const DreamCacheOptions& options) {
  const auto& config = model.config();
  UNMASK_ASSIGN_OR_RETURN(PromptBatch normal, NormalizePromptBatch(prompts, config.pad_token_id, config.embedding_size));
  UNMASK_RETURN_IF_ERROR(CheckOptions(normal, params, options, config));
  try {
    return std::unique_ptr<StepSampler>(std::make_unique<DreamCacheStepSampler>(model, normal, params, options));
  } catch (const std::exception& e) {
    return InternalError(std::string(DreamCacheModeName(options)) + " sampler: " + e.what());
  }
}

}  // namespace unmask::sampler
