// Dream's token sampling, as the official sample_tokens computes it (Dream's generation_utils.py,
// and the copy in Fast-dLLM's Dream sampler): shared by Dream's diffusion_generate
// (dream_sampler.h) and Fast-dLLM's Dream cache sampler (dream_cache_sampler.h), so that both draw
// the same tokens from the same generator. tests/data/dream-golden.md has the exact semantics.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

#include "common/sampler/sampler_params.h"

namespace unmask::sampler::dream {

// torch.distributions.Categorical(probs).sample() over the rows of probs ([n, V]): the rows
// normalised, their simplex checked (Categorical's validation: non-negative, sums within 1e-6 of
// 1), one multinomial draw each. A row that fails the check makes the official code fall back to
// the argmax of every row (then nothing is drawn).
at::Tensor CategoricalSample(const at::Tensor& probs, at::Generator& gen);

// The official sample_tokens over logits [n, V] (float32): logits / temperature (when > 0),
// top_p then top_k (p.top_p < 1, p.top_k > 0; at temperature 0 too), softmax; the token is a
// Categorical draw at temperature > 0, else the most probable (first on ties). The confidence
// under `alg`: maskgit_plus (and origin) the token's probability, topk_margin top-1 minus top-2
// probability, entropy sum(p * log(p + 1e-10)). Returns {token, confidence}, [n] each. No rows:
// empty results and no draws (the official Categorical raises on an empty batch and falls back
// to max, which draws nothing).
std::pair<at::Tensor, at::Tensor> SampleTokens(at::Tensor logits, const GenerationParams& p, generation::DreamAlg alg,
                                               at::Generator& gen);

}  // namespace unmask::sampler::dream
