#include "common/fitting/sampler_kind.h"

namespace unmask::fitting {

using generation::CacheKind;
using generation::DecodeRule;
using generation::SamplerMode;

const char* SamplerKindName(SamplerKind kind) {
  switch (kind) {
    case SamplerKind::kReference: return "reference";
    case SamplerKind::kBlockLogits: return "block_logits";
    case SamplerKind::kPrefixCache: return "prefix_cache";
    case SamplerKind::kDualCache: return "dual_cache";
    case SamplerKind::kLlada2: return "llada2";
  }
  return "reference";
}

SamplerKind SamplerKindOf(SamplerMode mode) {
  if (generation::IsBlockDiffusion(mode)) return SamplerKind::kLlada2;
  CacheKind cache;
  DecodeRule rule;
  // Fast-dLLM's Dream modes keep the K/V of the whole canvas as LLaDA's cached modes do.
  if (!generation::FastModeOf(mode, &cache, &rule) && !generation::DreamCacheModeOf(mode, &cache, &rule))
    return SamplerKind::kReference;
  switch (cache) {
    case CacheKind::kNone: return SamplerKind::kBlockLogits;
    case CacheKind::kPrefix: return SamplerKind::kPrefixCache;
    case CacheKind::kDual: return SamplerKind::kDualCache;
  }
  return SamplerKind::kBlockLogits;
}

SamplerMode WithSamplerKind(SamplerMode mode, SamplerKind kind) {
  // The block-diffusion modes and dream are their models' only modes: never swapped.
  if (generation::IsBlockDiffusion(mode) || generation::IsDreamFamily(mode) || kind == SamplerKind::kLlada2) return mode;
  CacheKind cache = CacheKind::kNone;
  DecodeRule rule = DecodeRule::kSchedule;
  generation::FastModeOf(mode, &cache, &rule);
  switch (kind) {
    case SamplerKind::kReference: return SamplerMode::kReference;
    case SamplerKind::kBlockLogits: cache = CacheKind::kNone; break;
    case SamplerKind::kPrefixCache: cache = CacheKind::kPrefix; break;
    case SamplerKind::kDualCache: cache = CacheKind::kDual; break;
    case SamplerKind::kLlada2: break;  // handled above
  }
  for (SamplerMode m : generation::AllSamplerModes()) {  // the mode of that (cache, rule) pair
    CacheKind c;
    DecodeRule r;
    if (generation::FastModeOf(m, &c, &r) && c == cache && r == rule) return m;
  }
  return mode;  // unreachable: every pair has its mode
}

}  // namespace unmask::fitting
