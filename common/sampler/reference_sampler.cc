#include "common/sampler/reference_sampler.h"

#include <ATen/ATen.h>

#include <chrono>
#include <limits>

#include "common/sampler/sampling_ops.h"
#include "common/sampler/transfer_schedule.h"

namespace unmask::sampler {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// One denoising step's logits, with classifier-free guidance when asked.
at::Tensor StepLogits(const model::ModelBackend& model, const at::Tensor& x, const at::Tensor& attention_mask,
                      const at::Tensor& prompt_index, const GenerationParams& p) {
  if (p.cfg_scale <= 0) return model.Logits(x, attention_mask);
  at::Tensor un_x = x.clone().masked_fill_(prompt_index, p.mask_id);
  at::Tensor both = at::cat({x, un_x}, 0);
  at::Tensor both_mask = attention_mask.defined() ? at::cat({attention_mask, attention_mask}, 0) : at::Tensor();
  at::Tensor logits = model.Logits(both, both_mask);
  auto halves = logits.chunk(2, 0);
  return halves[1] + (p.cfg_scale + 1) * (halves[0] - halves[1]);
}

}  // namespace

StatusOr<GenerationResult> ReferenceGenerate(const model::ModelBackend& model, const PromptBatch& raw_prompts,
                                             const GenerationParams& p, const StepCallback& on_step) {
  UNMASK_ASSIGN_OR_RETURN(SamplingStart s, StartSampling(model, raw_prompts, p));
  const std::int64_t batch = s.batch, prompt_len = s.prompt_len, total = s.total;
  const auto start = std::chrono::steady_clock::now();
  try {
    const at::Device device = model.device();
    at::Generator gen = s.gen;
    at::Tensor x = std::move(s.x);
    const at::Tensor attention_mask = std::move(s.attention_mask);
    const at::Tensor prompt_index = std::move(s.prompt_index);
    const std::int64_t num_blocks = p.gen_length / p.block_length;
    const std::int64_t steps_per_block = p.steps / num_blocks;

    GenerationResult result;
    for (std::int64_t nb = 0; nb < num_blocks; ++nb) {
      const std::int64_t block_start = prompt_len + nb * p.block_length;
      const std::int64_t block_end = block_start + p.block_length;
      at::Tensor masked_in_block = x.narrow(1, block_start, p.block_length).eq(p.mask_id).sum(1).cpu();
      std::vector<std::vector<std::int64_t>> schedule;
      for (std::int64_t r = 0; r < batch; ++r)
        schedule.push_back(NumTransferTokens(masked_in_block[r].item<std::int64_t>(), steps_per_block));

      for (std::int64_t i = 0; i < steps_per_block; ++i) {
        const at::Tensor mask_index = x.eq(p.mask_id);
        at::Tensor logits = StepLogits(model, x, attention_mask, prompt_index, p);
        if (p.logits_eos_inf) logits.select(-1, p.eos_id).fill_(kNegInf);
        at::Tensor noisy = p.temperature == 0 ? logits : AddGumbelNoise(logits, p.temperature, gen);
        at::Tensor x0 = noisy.argmax(-1);
        if (p.confidence_eos_eot_inf) {
          // `noisy[..., EOS] = logits[..., EoT] = -inf`; aliasing at temperature 0 is intended.
          noisy.select(-1, p.eos_id).fill_(kNegInf);
          logits.select(-1, p.eot_id).fill_(kNegInf);
        }
        at::Tensor x0_p;
        if (p.remasking == Remasking::kLowConfidence) {
          x0_p = at::softmax(logits, -1).gather(-1, x0.unsqueeze(-1)).squeeze(-1);
        } else {
          x0_p = at::empty({batch, total}, at::TensorOptions().dtype(at::kFloat).device(device)).uniform_(0, 1, gen);
        }
        if (block_end < total) x0_p.narrow(1, block_end, total - block_end).fill_(kNegInf);
        x0 = at::where(mask_index, x0, x);
        const at::Tensor confidence = x0_p.masked_fill(mask_index.logical_not(), kNegInf);

        at::Tensor transfer = at::zeros_like(x0, at::TensorOptions().dtype(at::kBool));
        for (std::int64_t r = 0; r < batch; ++r) {
          const std::int64_t k = schedule[r][i];
          if (k == 0) continue;
          at::Tensor picked = std::get<1>(at::topk(confidence[r], k));
          transfer[r].index_fill_(0, picked, true);
        }
        x = at::where(transfer, x0, x);

        ++result.steps_run;
        UNMASK_RETURN_IF_ERROR(ReportStep(on_step, transfer, x, prompt_len, nb * steps_per_block + i, nb, i, start));
      }
    }
    result.output = ToRows(x.narrow(1, prompt_len, p.gen_length));
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  } catch (const std::exception& e) {
    return InternalError(std::string("reference sampler: ") + e.what());
  }
}

}  // namespace unmask::sampler
