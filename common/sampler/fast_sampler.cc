#include "common/sampler/fast_sampler.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

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

Status ValidateFastOptions(const FastOptions& o) {
  if (!std::isfinite(o.threshold) || o.threshold < 0)
    return InvalidArgumentError("threshold must be a finite number >= 0, got " + std::to_string(o.threshold));
  if (!std::isfinite(o.factor) || o.factor <= 0)
    return InvalidArgumentError("factor must be a finite number > 0, got " + std::to_string(o.factor));
  return OkStatus();
}

StatusOr<GenerationResult> FastGenerate(const model::LladaModel& model, const PromptBatch& raw_prompts,
                                        const GenerationParams& p, const FastOptions& o, const StepCallback& on_step) {
  UNMASK_ASSIGN_OR_RETURN(SamplingStart s, StartSampling(model, raw_prompts, p));
  UNMASK_RETURN_IF_ERROR(ValidateFastOptions(o));
  const std::int64_t batch = s.batch, prompt_len = s.prompt_len, total = s.total;
  const char* name = FastModeName(o.cache, o.rule);
  const auto start = std::chrono::steady_clock::now();
  try {
    const at::Device device = model.device();
    at::Generator gen = s.gen;
    at::Tensor x = std::move(s.x);
    const at::Tensor attention_mask = std::move(s.attention_mask);
    const at::Tensor prompt_index = std::move(s.prompt_index);
    const bool cfg = p.cfg_scale > 0;
    const at::Tensor model_mask =
        cfg && attention_mask.defined() ? at::cat({attention_mask, attention_mask}, 0) : attention_mask;
    const std::int64_t num_blocks = p.gen_length / p.block_length;
    const std::int64_t steps_per_block = p.steps / num_blocks;
    const std::int64_t bl = p.block_length;
    std::unique_ptr<BlockForward> forward = MakeForward(o.cache, model);
    const bool reference_confidence = o.cache == CacheKind::kNone && o.rule == DecodeRule::kSchedule;

    GenerationResult result;
    result.sampler = name;
    std::vector<char> done(batch, 0);
    bool all_done = false;
    std::int64_t step = 0;
    for (std::int64_t nb = 0; nb < num_blocks && !all_done; ++nb) {
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
        xb.copy_(at::where(transfer.narrow(1, block_start, bl), x0, xb));

        if (o.early_stop) {
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

        ++result.steps_run;
        UNMASK_RETURN_IF_ERROR(ReportStep(on_step, transfer, x, prompt_len, step, nb, i, start));
        ++step;
        if (all_done) break;
      }
    }
    result.output = ToRows(x.narrow(1, prompt_len, p.gen_length));
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  } catch (const std::exception& e) {
    return InternalError(std::string(name) + " sampler: " + e.what());
  }
}

}  // namespace unmask::sampler
