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
#include "common/sampler/transfer_schedule.h"

namespace unmask::sampler {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

std::unique_ptr<BlockForward> MakeForward(CacheKind cache, const model::LladaModel& model) {
  switch (cache) {
    case CacheKind::kPrefix:
      return MakePrefixCacheForward(model);
    case CacheKind::kDual:
      return MakeDualCacheForward(model);
    case CacheKind::kNone:
      break;
  }
  return MakeBlockLogitsForward(model);
}

std::vector<double> ToDoubles(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU, at::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace

namespace {

// One FastGenerate run, by step: a block at a time (RunBlock), each step predicting the block's
// tokens and their confidence (Predict), picking which to unmask (PickTransfers), and stopping
// rows that finished (EarlyStop).
struct FastRun {
  FastRun(const model::LladaModel& model, SamplingStart& s, const GenerationParams& p, const FastOptions& o,
          const StepCallback& on_step, std::chrono::steady_clock::time_point start)
      : model(model), p(p), o(o), on_step(on_step), start(start), batch(s.batch), prompt_len(s.prompt_len),
        total(s.total), device(model.device()), gen(s.gen), x(std::move(s.x)), prompt_index(std::move(s.prompt_index)),
        cfg(p.cfg_scale > 0), bl(p.block_length), done(batch, 0) {
    const at::Tensor attention_mask = std::move(s.attention_mask);
    model_mask = cfg && attention_mask.defined() ? at::cat({attention_mask, attention_mask}, 0) : attention_mask;
    num_blocks = p.gen_length / p.block_length;
    steps_per_block = p.steps / num_blocks;
    forward = MakeForward(o.cache, model);
    reference_confidence = o.cache == CacheKind::kNone && o.rule == DecodeRule::kSchedule;
  }

  Status RunBlock(std::int64_t nb);
  // The step's candidate tokens x0 ([B, bl], the block's own tokens where unmasked) and the
  // confidence over the full row ([B, total], -inf outside the block and at unmasked positions).
  std::pair<at::Tensor, at::Tensor> Predict(const at::Tensor& xb, const at::Tensor& mask_index, std::int64_t block_start,
                                            std::int64_t block_end, std::int64_t i);
  // [B, total]: the positions this step unmasks.
  at::Tensor PickTransfers(const at::Tensor& confidence, const at::Tensor& mask_index,
                           const std::vector<std::vector<std::int64_t>>& schedule, std::int64_t i,
                           std::int64_t block_start, std::int64_t topk_begin, std::int64_t topk_end);
  void EarlyStop(const at::Tensor& xb, at::Tensor& transfer, std::int64_t block_end);

  const model::LladaModel& model;
  const GenerationParams& p;
  const FastOptions& o;
  const StepCallback& on_step;
  const std::chrono::steady_clock::time_point start;
  const std::int64_t batch, prompt_len, total;
  const at::Device device;
  at::Generator gen;
  at::Tensor x;
  const at::Tensor prompt_index;
  at::Tensor model_mask;
  const bool cfg;
  const std::int64_t bl;
  std::int64_t num_blocks = 0, steps_per_block = 0;
  std::unique_ptr<BlockForward> forward;
  bool reference_confidence = false;
  GenerationResult result;
  std::vector<char> done;
  bool all_done = false;
  std::int64_t step = 0;
};

Status FastRun::RunBlock(std::int64_t nb) {
  const std::int64_t block_start = prompt_len + nb * bl;
  const std::int64_t block_end = block_start + bl;
  at::Tensor xb = x.narrow(1, block_start, bl);  // a view: writes land in x
  std::vector<std::vector<std::int64_t>> schedule;
  if (o.rule == DecodeRule::kSchedule) {
    at::Tensor masked_in_block = xb.eq(p.mask_id).sum(1).cpu();
    for (std::int64_t r = 0; r < batch; ++r)
      schedule.push_back(NumTransferTokens(masked_in_block[r].item<std::int64_t>(), steps_per_block));
  }

  for (std::int64_t i = 0;; ++i) {
    const at::Tensor mask_index = xb.eq(p.mask_id);  // [B, bl]
    // Fast-dLLM's cache loops run at least one cached forward after a block's first step, even
    // when that step (a threshold or factor rule) unmasked the whole block: it changes nothing,
    // and it is run and counted as Fast-dLLM runs and counts it.
    const bool fast_dllm_second_forward = o.cache != CacheKind::kNone && o.rule != DecodeRule::kSchedule && i == 1;
    if (!mask_index.any().item<bool>() && !fast_dllm_second_forward) break;
    if (o.rule == DecodeRule::kSchedule && i >= steps_per_block) break;  // the schedule empties the block first
    // Where top-k looks, as in Fast-dLLM: the whole row at a block's first step (and without a
    // cache), the block and everything after it (prefix cache), the block alone (dual cache).
    // Ties (confidences of exactly 1.0 are common on a confident model) then break the same way.
    const std::int64_t topk_begin = i == 0 || o.cache == CacheKind::kNone ? 0 : block_start;
    const std::int64_t topk_end = i > 0 && o.cache == CacheKind::kDual ? block_end : total;

    auto [x0, confidence] = Predict(xb, mask_index, block_start, block_end, i);
    at::Tensor transfer = PickTransfers(confidence, mask_index, schedule, i, block_start, topk_begin, topk_end);
    xb.copy_(at::where(transfer.narrow(1, block_start, bl), x0, xb));
    if (o.early_stop) EarlyStop(xb, transfer, block_end);

    ++result.steps_run;
    UNMASK_RETURN_IF_ERROR(ReportStep(on_step, transfer, x, prompt_len, step, nb, i, start));
    ++step;
    if (all_done) break;
  }
  return OkStatus();
}

std::pair<at::Tensor, at::Tensor> FastRun::Predict(const at::Tensor& xb, const at::Tensor& mask_index,
                                                   std::int64_t block_start, std::int64_t block_end, std::int64_t i) {
  at::Tensor model_x = x;
  if (cfg) model_x = at::cat({x, x.clone().masked_fill_(prompt_index, p.mask_id)}, 0);
  at::Tensor hidden = forward->BlockHidden(model_x, model_mask, block_start, block_end, i);  // [B', bl, d]
  // At temperature 0 only the masked rows' logits are read (an unmasked row keeps its token
  // and gets confidence -inf), so the LM head runs over those rows alone. Without noise no
  // random draw depends on the rows' number, and each row's logits are the same bits.
  const bool masked_rows_only = p.temperature == 0;
  if (masked_rows_only) hidden = hidden.index({cfg ? at::cat({mask_index, mask_index}, 0) : mask_index});
  at::Tensor logits = model.HeadLogits(hidden);  // [B', bl, V], or [rows, V]
  if (cfg) {
    auto halves = logits.chunk(2, 0);
    logits = halves[1] + (p.cfg_scale + 1) * (halves[0] - halves[1]);
  }
  if (p.logits_eos_inf) logits.select(-1, p.eos_id).fill_(kNegInf);
  at::Tensor noisy = p.temperature == 0 ? logits : AddGumbelNoise(logits, p.temperature, gen);
  at::Tensor x0 = noisy.argmax(-1);  // [B, bl], or [rows]
  if (p.confidence_eos_eot_inf) {
    // The reference's `noisy[..., EOS] = logits[..., EoT] = -inf`, aliasing at temperature 0 included.
    noisy.select(-1, p.eos_id).fill_(kNegInf);
    logits.select(-1, p.eot_id).fill_(kNegInf);
  }
  at::Tensor x0_p;
  if (p.remasking == Remasking::kLowConfidence) {
    // Fast-dLLM takes this softmax in float64 (near-1 confidences stay distinct, so top-k
    // and the thresholds see what it sees); plain block_logits keeps the reference's dtype
    // so that it stays exact to the reference.
    x0_p = at::softmax(reference_confidence ? logits : logits.to(at::kDouble), -1)
               .gather(-1, x0.unsqueeze(-1))
               .squeeze(-1);
    if (masked_rows_only) x0_p = at::full({batch, bl}, kNegInf, x0_p.options()).masked_scatter_(mask_index, x0_p);
  } else {
    // The reference's draw shape, so that the generator stream stays the same.
    x0_p = at::empty({batch, total}, at::TensorOptions().dtype(at::kFloat).device(device))
               .uniform_(0, 1, gen)
               .narrow(1, block_start, bl);
  }
  x0 = masked_rows_only ? xb.masked_scatter(mask_index, x0) : at::where(mask_index, x0, xb);
  // Confidence over the full row (-inf outside the block), so that top-k sees what the
  // reference's top-k sees.
  at::Tensor confidence = at::full({batch, total}, kNegInf, x0_p.options());
  confidence.narrow(1, block_start, bl).copy_(x0_p.masked_fill(mask_index.logical_not(), kNegInf));
  return {x0, confidence};
}

at::Tensor FastRun::PickTransfers(const at::Tensor& confidence, const at::Tensor& mask_index,
                                  const std::vector<std::vector<std::int64_t>>& schedule, std::int64_t i,
                                  std::int64_t block_start, std::int64_t topk_begin, std::int64_t topk_end) {
  at::Tensor transfer = at::zeros({batch, total}, at::TensorOptions().dtype(at::kBool).device(device));
  at::Tensor masked_per_row = mask_index.sum(1).cpu();
  for (std::int64_t r = 0; r < batch; ++r) {
    const std::int64_t masked = masked_per_row[r].item<std::int64_t>();
    if (masked == 0) continue;
    std::int64_t k = 0;
    if (o.rule == DecodeRule::kSchedule) {
      k = schedule[r][i];
    } else {
      at::Tensor sorted = std::get<0>(confidence[r].narrow(0, block_start, bl).sort(-1, /*descending=*/true));
      const std::vector<double> c = ToDoubles(sorted.narrow(0, 0, masked));
      k = o.rule == DecodeRule::kThreshold ? ThresholdCount(c, o.threshold) : FactorCount(c, o.factor);
    }
    if (k == 0) continue;
    at::Tensor picked = std::get<1>(at::topk(confidence[r].narrow(0, topk_begin, topk_end - topk_begin), k)) + topk_begin;
    transfer[r].index_fill_(0, picked, true);
  }
  return transfer;
}

void FastRun::EarlyStop(const at::Tensor& xb, at::Tensor& transfer, std::int64_t block_end) {
  at::Tensor block_open = xb.eq(p.mask_id).any(1).cpu();
  at::Tensor last = xb.select(1, bl - 1).cpu();
  for (std::int64_t r = 0; r < batch; ++r) {
    if (done[r] || block_open[r].item<bool>() || last[r].item<std::int64_t>() != p.eos_id) continue;
    done[r] = 1;
    if (block_end < total) {
      transfer[r].narrow(0, block_end, total - block_end).fill_(true);
      x[r].narrow(0, block_end, total - block_end).fill_(p.eos_id);
    }
  }
  all_done = std::all_of(done.begin(), done.end(), [](char d) { return d != 0; });
}

}  // namespace

StatusOr<GenerationResult> FastGenerate(const model::LladaModel& model, const PromptBatch& raw_prompts,
                                        const GenerationParams& p, const FastOptions& o, const StepCallback& on_step) {
  UNMASK_ASSIGN_OR_RETURN(SamplingStart s, StartSampling(model, raw_prompts, p));
  UNMASK_RETURN_IF_ERROR(ValidateFastOptions(o));
  const char* name = FastModeName(o.cache, o.rule);
  const auto start = std::chrono::steady_clock::now();
  try {
    FastRun run(model, s, p, o, on_step, start);
    run.result.sampler = name;
    for (std::int64_t nb = 0; nb < run.num_blocks && !run.all_done; ++nb) {
      UNMASK_RETURN_IF_ERROR(run.RunBlock(nb));
    }
    GenerationResult& result = run.result;
    result.output = ToRows(run.x.narrow(1, s.prompt_len, p.gen_length));
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  } catch (const std::exception& e) {
    return InternalError(std::string(name) + " sampler: " + e.what());
  }
}

}  // namespace unmask::sampler
