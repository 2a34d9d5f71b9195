#include "common/generation/params.h"

namespace unmask::generation {

StatusOr<Remasking> ParseRemasking(const std::string& text) {
  if (text == "low_confidence") return Remasking::kLowConfidence;
  if (text == "random") return Remasking::kRandom;
  return InvalidFieldError("remasking", "'" + text + "' is not one of low_confidence, random");
}

const char* RemaskingName(Remasking r) { return r == Remasking::kRandom ? "random" : "low_confidence"; }

StatusOr<DreamAlg> ParseDreamAlg(const std::string& text) {
  for (DreamAlg a : {DreamAlg::kOrigin, DreamAlg::kMaskgitPlus, DreamAlg::kTopkMargin, DreamAlg::kEntropy}) {
    if (text == DreamAlgName(a)) return a;
  }
  return InvalidFieldError("alg", "'" + text + "' is not one of origin, maskgit_plus, topk_margin, entropy");
}

const char* DreamAlgName(DreamAlg alg) {
  switch (alg) {
    case DreamAlg::kOrigin: return "origin";
    case DreamAlg::kMaskgitPlus: return "maskgit_plus";
    case DreamAlg::kTopkMargin: return "topk_margin";
    case DreamAlg::kEntropy: return "entropy";
  }
  return "entropy";
}

void ResolveLengths(std::optional<std::int64_t> gen_length, std::optional<std::int64_t> block_length,
                    std::optional<std::int64_t> steps, GenerationParams& p) {
  p.gen_length = gen_length.value_or(kDefaultGenLength);
  const bool llada2 = IsBlockDiffusion(p.sampler);
  if (block_length) {
    p.block_length = *block_length;
  } else if (HasNoBlocks(p.sampler)) {
    p.block_length = p.gen_length;
  } else if (llada2) {
    p.block_length = kDefaultMaxBlockLength;
  } else {
    p.block_length = 1;
    for (std::int64_t b = std::min(kDefaultMaxBlockLength, p.gen_length); b > 1; --b) {
      if (p.gen_length % b == 0) {
        p.block_length = b;
        break;
      }
    }
  }
  p.steps = steps.value_or(llada2 ? p.block_length : p.gen_length);
}

void ResolveThreshold(std::optional<double> threshold, GenerationParams& p) {
  p.threshold = threshold.value_or(IsBlockDiffusion(p.sampler) ? kDefaultLlada2Threshold : kDefaultThreshold);
}

SamplerMode DefaultSampler(const checkpoint::LladaConfig& config) {
  if (config.architecture == checkpoint::Architecture::kDream) return SamplerMode::kDream;
  if (config.architecture != checkpoint::Architecture::kLlada2Moe) return SamplerMode::kReference;
  return config.token_editing ? SamplerMode::kLlada21 : SamplerMode::kLlada2;
}

void WithModelTokens(const checkpoint::LladaConfig& config, GenerationParams& p) {
  p.mask_id = config.mask_token_id;
  p.eos_id = config.eos_token_id;
  p.eot_id = config.eot_token_id;
}

FastOptions FastOptionsOf(const GenerationParams& p) {
  FastOptions o;
  FastModeOf(p.sampler, &o.cache, &o.rule);
  o.threshold = p.threshold;
  o.factor = p.factor;
  o.early_stop = p.early_stop;
  return o;
}

}  // namespace unmask::generation
