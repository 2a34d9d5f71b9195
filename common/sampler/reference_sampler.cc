#include "common/sampler/reference_sampler.h"

#include <ATen/ATen.h>

#include <chrono>
#include <limits>

#include "common/sampler/sampling_ops.h"
#include "common/sampler/step_logprobs.h"
#include "common/sampler/transfer_schedule.h"

namespace unmask::sampler {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The rows the model runs: x, and with classifier-free guidance x with the prompt masked too.
at::Tensor ModelInput(const at::Tensor& x, const at::Tensor& prompt_index, const GenerationParams& p) {
  if (p.cfg_scale <= 0) return x;
  return at::cat({x, x.clone().masked_fill_(prompt_index, p.mask_id)}, 0);
}

at::Tensor ModelMask(const at::Tensor& attention_mask, const GenerationParams& p) {
  if (p.cfg_scale <= 0 || !attention_mask.defined()) return attention_mask;
  return at::cat({attention_mask, attention_mask}, 0);
}

// The per-row transfer counts of the block that starts at block_start.
std::vector<std::vector<std::int64_t>> BlockSchedule(const at::Tensor& x, std::int64_t block_start,
                                                     const GenerationParams& p, std::int64_t steps_per_block) {
  at::Tensor masked_in_block = x.narrow(1, block_start, p.block_length).eq(p.mask_id).sum(1).cpu();
  std::vector<std::vector<std::int64_t>> schedule;
  for (std::int64_t r = 0; r < x.size(0); ++r)
    schedule.push_back(NumTransferTokens(masked_in_block[r].item<std::int64_t>(), steps_per_block));
  return schedule;
}

// One step of the official loop once the model's logits ([B', L, V]) are in: guidance, the EOS
// switches, noise, confidences, top-k per row. Updates x; returns the positions it set [B, L].
// With params.logprobs, `lp` takes the log-probabilities of the block's masked positions.
at::Tensor ReferenceStep(at::Tensor logits, at::Tensor& x, const GenerationParams& p, at::Generator& gen,
                         std::int64_t block_end, const std::vector<std::vector<std::int64_t>>& schedule,
                         std::int64_t i, StepLogprobs& lp) {
  const std::int64_t batch = x.size(0), total = x.size(1);
  const at::Tensor mask_index = x.eq(p.mask_id);
  if (p.cfg_scale > 0) logits = GuidedLogits(logits, p.cfg_scale);
  if (p.logits_eos_inf) logits.select(-1, p.eos_id).fill_(kNegInf);
  if (p.logprobs >= 0) {
    const std::int64_t block_start = block_end - p.block_length;
    lp = StepLogprobs::TakeWhere(logits.narrow(1, block_start, p.block_length),
                                 mask_index.narrow(1, block_start, p.block_length), block_start, p.logprobs);
  }
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
    x0_p = at::empty({batch, total}, at::TensorOptions().dtype(at::kFloat).device(x.device())).uniform_(0, 1, gen);
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
  return transfer;
}

// The official loop a step at a time over a LladaModel: every step runs the whole sequence and
// the LM head over every position, as ReferenceGenerate does.
class ReferenceStepSampler : public StepSampler {
 public:
  ReferenceStepSampler(const model::LladaModel& model, SamplingStart s, const GenerationParams& p)
      : model_(model), p_(p), prompt_len_(s.prompt_len), gen_(s.gen), x_(std::move(s.x)),
        attention_mask_(ModelMask(s.attention_mask, p)), prompt_index_(std::move(s.prompt_index)) {
    num_blocks_ = p.gen_length / p.block_length;
    steps_per_block_ = p.steps / num_blocks_;
    result_.sampler = SamplerModeName(SamplerMode::kReference);
    schedule_ = BlockSchedule(x_, prompt_len_, p_, steps_per_block_);
  }

  bool running() const override { return nb_ < num_blocks_; }
  model::PackedSegment NextForward() override {
    model::PackedSegment whole;
    whole.ids = ModelInput(x_, prompt_index_, p_);
    whole.attention_mask = attention_mask_;
    whole.attention_query_chunk = p_.attention_query_chunk;
    return whole;
  }
  StepEvent FinishStep(const at::Tensor& hidden) override {
    const std::int64_t block_end = prompt_len_ + (nb_ + 1) * p_.block_length;
    StepLogprobs lp;
    const at::Tensor transfer = ReferenceStep(model_.HeadLogits(hidden), x_, p_, gen_, block_end, schedule_, i_, lp);
    StepEvent ev = MakeStepEvent(transfer, x_, prompt_len_);
    lp.Attach(ev, prompt_len_);
    ev.step = nb_ * steps_per_block_ + i_;
    ev.block = nb_;
    ev.step_in_block = i_;
    ++result_.steps_run;
    if (++i_ == steps_per_block_) {
      i_ = 0;
      if (++nb_ < num_blocks_) schedule_ = BlockSchedule(x_, prompt_len_ + nb_ * p_.block_length, p_, steps_per_block_);
    }
    return ev;
  }
  GenerationResult Result() const override {
    GenerationResult r = result_;
    r.output = ToRows(x_.narrow(1, prompt_len_, p_.gen_length));
    return r;
  }
  std::int64_t CacheBytes() const override { return 0; }

 private:
  const model::LladaModel& model_;
  const GenerationParams p_;
  const std::int64_t prompt_len_;
  at::Generator gen_;
  at::Tensor x_;
  const at::Tensor attention_mask_, prompt_index_;
  std::int64_t num_blocks_ = 0, steps_per_block_ = 0, nb_ = 0, i_ = 0;
  std::vector<std::vector<std::int64_t>> schedule_;
  GenerationResult result_;
};

}  // namespace

StatusOr<GenerationResult> ReferenceGenerate(const model::ModelBackend& model, const PromptBatch& raw_prompts,
                                             const GenerationParams& p, const StepCallback& on_step) {
  UNMASK_ASSIGN_OR_RETURN(SamplingStart s, StartSampling(model, raw_prompts, p));
  const std::int64_t prompt_len = s.prompt_len;
  const auto start = std::chrono::steady_clock::now();
  try {
    at::Generator gen = s.gen;
    at::Tensor x = std::move(s.x);
    const at::Tensor attention_mask = ModelMask(s.attention_mask, p);
    const at::Tensor prompt_index = std::move(s.prompt_index);
    const std::int64_t num_blocks = p.gen_length / p.block_length;
    const std::int64_t steps_per_block = p.steps / num_blocks;

    GenerationResult result;
    for (std::int64_t nb = 0; nb < num_blocks; ++nb) {
      const std::int64_t block_start = prompt_len + nb * p.block_length;
      const auto schedule = BlockSchedule(x, block_start, p, steps_per_block);
      for (std::int64_t i = 0; i < steps_per_block; ++i) {
        at::Tensor logits = model.Logits(ModelInput(x, prompt_index, p), attention_mask);
        StepLogprobs lp;
        const at::Tensor transfer = ReferenceStep(logits, x, p, gen, block_start + p.block_length, schedule, i, lp);
        ++result.steps_run;
        StepEvent ev = MakeStepEvent(transfer, x, prompt_len);
        lp.Attach(ev, prompt_len);
        RecordLogprobs(ev, result.logprobs);
        UNMASK_RETURN_IF_ERROR(ReportStep(on_step, std::move(ev), nb * steps_per_block + i, nb, i, start));
      }
    }
    result.output = ToRows(x.narrow(1, prompt_len, p.gen_length));
    FinishLogprobs(result.output, result.logprobs);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  } catch (const std::exception& e) {
    return InternalError(std::string("reference sampler: ") + e.what());
  }
}

StatusOr<std::unique_ptr<StepSampler>> StartReferenceStepSampler(const model::LladaModel& model,
                                                                 const PromptBatch& prompts, const GenerationParams& p) {
  UNMASK_ASSIGN_OR_RETURN(SamplingStart s, StartSampling(model, prompts, p));
  try {
    return std::unique_ptr<StepSampler>(std::make_unique<ReferenceStepSampler>(model, std::move(s), p));
  } catch (const std::exception& e) {
    return InternalError(std::string("reference sampler: ") + e.what());
  }
}

}  // namespace unmask::sampler
