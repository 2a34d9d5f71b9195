#include "common/sampler/dream_sampling.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <tuple>

namespace unmask::sampler::dream {
namespace {

constexpr float kLowest = std::numeric_limits<float>::lowest();  // torch.finfo(float32).min

}  // namespace

at::Tensor TopKLogits(const at::Tensor& logits, std::int64_t k) {
  if (k <= 0) return logits;
  const at::Tensor kth = std::get<0>(at::topk(logits, std::min<std::int64_t>(k, logits.size(-1)))).narrow(-1, -1, 1);
  return logits.masked_fill(logits < kth, kLowest);
}

at::Tensor TopPLogits(const at::Tensor& logits, double p) {
  if (p >= 1.0) return logits;
  auto [sorted, order] = at::sort(logits, -1, /*descending=*/true);
  const at::Tensor crossed = at::cumsum(at::softmax(sorted, -1), -1) > p;
  at::Tensor drop = at::zeros_like(crossed);
  const std::int64_t v = logits.size(-1);
  drop.narrow(-1, 1, v - 1).copy_(crossed.narrow(-1, 0, v - 1));
  return logits.masked_fill(at::zeros_like(crossed).scatter(-1, order, drop), kLowest);
}

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
  if (p.top_p < 1) logits = TopPLogits(logits, p.top_p);
  if (p.top_k > 0) logits = TopKLogits(logits, p.top_k);
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
