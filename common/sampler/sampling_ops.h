// Tensor helpers shared by the samplers.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "common/model/model_backend.h"
#include "common/sampler/sampler_params.h"
#include "common/sampler/step_event.h"
#include "common/util/status.h"

namespace unmask::sampler {

// A generator for `device` in the state torch.manual_seed(seed) leaves the default one in.
at::Generator MakeSeededGenerator(c10::Device device, std::uint64_t seed);

// The reference's Gumbel-max trick: exp(logits) / (-log(u))^temperature in float64, with u drawn
// as rand_like over the full logits.
at::Tensor AddGumbelNoise(const at::Tensor& logits, double temperature, at::Generator& gen);

// Classifier-free guidance over logits whose batch is [conditional; unconditional] (the prompt
// masked): un + (cfg_scale + 1) * (cond - un), as the official generate() computes it.
at::Tensor GuidedLogits(const at::Tensor& logits, double cfg_scale);

// Top-k and top-p (nucleus) filtering of logits [.., V], as LLaDA2's and Dream's official code
// do it: below the k-th largest logit of its row (ties with it stay), or outside the smallest set
// of most likely tokens whose probability passes p (the token that crosses p and the most likely
// one stay), a logit becomes `fill` (LLaDA2: -inf; Dream: float32's lowest). k <= 0 / p >= 1: off.
at::Tensor FilterTopK(const at::Tensor& logits, std::int64_t k, double fill);
at::Tensor FilterTopP(const at::Tensor& logits, double p, double fill);

// The greedy pick with its float64 confidence, over CPU logits [rows, V] (float32 or bf16) in one
// pass per row (model/greedy_rows.h): *x0 = argmax (int64 [rows]) and *confidence =
// softmax(logits in float64)[x0] (float64 [rows]), `excluded` ids counting as -inf in the softmax
// alone. False, touching nothing, where that loop does not run (another device or dtype, or the
// active kernel path has no form of it); the caller then composes ATen's operators.
bool GreedyConfidenceOnCpu(const at::Tensor& logits, const std::vector<std::int64_t>& excluded, at::Tensor* x0,
                           at::Tensor* confidence);

at::Tensor ToTensor(const std::vector<std::vector<std::int64_t>>& rows, c10::Device device);
std::vector<std::vector<std::int64_t>> ToRows(const at::Tensor& t);

// The starting sequence of every sampler: the (left-padded) prompts followed by the canvas's
// region (gen_length ids, holes as mask ids: all mask ids for plain generation) and its suffix,
// [B, prompt_len + gen_length + suffix] on `device`, and the attention mask over it (undefined
// when no row is padded; else the prompts' mask followed by ones).
struct InitialSequence {
  at::Tensor x;
  at::Tensor attention_mask;
};
InitialSequence MakeInitialSequence(const std::vector<std::vector<std::int64_t>>& prompt_ids,
                                    const std::vector<std::vector<std::int64_t>>& prompt_mask, std::int64_t gen_length,
                                    std::int64_t mask_id, c10::Device device, const generation::Canvas& canvas = {});

// Positions (relative to prompt_len, ascending) and tokens set in `transfer` ([B, L] bool).
StepEvent MakeStepEvent(const at::Tensor& transfer, const at::Tensor& x, std::int64_t prompt_len);

// What every sampler starts from: the prompts normalized (rows left-padded with the model's pad
// id, ids checked against its vocabulary), the parameters validated against the model, the
// seeded generator, and the starting sequence with its attention mask and prompt positions.
// Errors: those of NormalizePromptBatch, ValidateCanvas and ValidateParams (the suffix counted
// with the prompt), as they are.
struct SamplingStart {
  std::int64_t batch = 0, prompt_len = 0, total = 0;  // total = prompt_len + gen_length + suffix
  at::Generator gen;
  at::Tensor x;               // [B, total]: prompts, the region (holes masked), the suffix
  at::Tensor attention_mask;  // undefined when no row is padded
  at::Tensor prompt_index;    // x != mask_id at the start (the prompt and the canvas's fixed tokens)
  bool canvas = false;        // a suffix or fixed region tokens: no row ends early at an EOS
};
StatusOr<SamplingStart> StartSampling(const model::ModelBackend& model, const PromptBatch& prompts,
                                      const GenerationParams& params);

// Reports one step to `on_step` (when set): its event (MakeStepEvent's), the step's indices and
// the time since `start`. Cancelled ("generation cancelled after step N") when the callback says stop.
Status ReportStep(const StepCallback& on_step, StepEvent ev, std::int64_t step, std::int64_t block,
                  std::int64_t step_in_block, std::chrono::steady_clock::time_point start);

}  // namespace unmask::sampler
