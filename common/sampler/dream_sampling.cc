#include "common/sampler/dream_sampling.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <tuple>

#include "common/sampler/sampling_ops.h"

namespace unmask::sampler::dream {
namespace {

constexpr float kLowest = std::numeric_limits<float>::lowest();  // torch.finfo(float32).min

}  // namespace

at::Tensor CategoricalSample(const at::Tensor& probs, at::Generator& gen) {
  const at::Tensor normal = probs / probs.sum(-1, /*keepdim=*/true);
  const bool simplex = normal.ge(0).all().item<bool>() &&
                       (normal.sum(-1) - 1).abs().lt(1e-6).all().item<bool>();
  if (!simplex) return probs.argmax(-1);
  return at::multinomial(normal, 1, /*replacement=*/true, gen).squeeze(-1);
}

std::pair<at::Tensor, at::Tensor> SampleTokens(at::Tensor logits, const GenerationParams& p, generation::DreamAlg alg,
                                               at::Generator& gen) {
  if (logits.size(0) == 0) {
    return {at::empty({0}, logits.options().dtype(at::kLong)), at::empty({0}, logits.options().dtype(at::kFloat))};
  }
  if (p.temperature > 0) logits = logits / p.temperature;
  logits = FilterTopK(FilterTopP(logits, p.top_p, kLowest), p.top_k, kLowest);  // top_p first, as the official code
  const at::Tensor probs = at::softmax(logits, -1);
  at::Tensor token, confidence;
  if (p.temperature > 0) {
    token = CategoricalSample(probs, gen);
    confidence = probs.gather(-1, token.unsqueeze(-1)).squeeze(-1);
  } else {
    std::tie(confidence, token) = probs.max(-1);
  }
  if (alg == generation::DreamAlg::kTopkMargin) {
    const at::Tensor sorted = std::get<0>(at::sort(probs, -1, /*descending=*/true));
    confidence = sorted.select(-1, 0) - sorted.select(-1, 1);
  } else if (alg == generation::DreamAlg::kEntropy) {
    confidence = (probs * at::log(probs + 1e-10)).sum(-1);
  }
  return {token, confidence};
}

}  // namespace unmask::sampler::dream
