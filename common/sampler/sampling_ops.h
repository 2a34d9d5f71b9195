// Tensor helpers shared by the samplers.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "common/sampler/step_event.h"

namespace unmask::sampler {

// A generator for `device` in the state torch.manual_seed(seed) leaves the default one in.
at::Generator MakeSeededGenerator(c10::Device device, std::uint64_t seed);

// The reference's Gumbel-max trick: exp(logits) / (-log(u))^temperature in float64, with u drawn
// as rand_like over the full logits.
at::Tensor AddGumbelNoise(const at::Tensor& logits, double temperature, at::Generator& gen);

at::Tensor ToTensor(const std::vector<std::vector<std::int64_t>>& rows, c10::Device device);
std::vector<std::vector<std::int64_t>> ToRows(const at::Tensor& t);

// The starting sequence of every sampler: the (left-padded) prompts followed by gen_length mask
// ids, [B, prompt_len + gen_length] on `device`, and the attention mask over it (undefined when
// no row is padded; else the prompts' mask followed by ones).
struct InitialSequence {
  at::Tensor x;
  at::Tensor attention_mask;
};
InitialSequence MakeInitialSequence(const std::vector<std::vector<std::int64_t>>& prompt_ids,
                                    const std::vector<std::vector<std::int64_t>>& prompt_mask, std::int64_t gen_length,
                                    std::int64_t mask_id, c10::Device device);

// Positions (relative to prompt_len, ascending) and tokens set in `transfer` ([B, L] bool).
StepEvent MakeStepEvent(const at::Tensor& transfer, const at::Tensor& x, std::int64_t prompt_len);

}  // namespace unmask::sampler
