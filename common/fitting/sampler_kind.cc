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
  }
  return "reference";
}

SamplerKind SamplerKindOf(SamplerMode mode) {
  CacheKind cache;
  DecodeRule rule;
  if (!generation::FastModeOf(mode, &cache, &rule)) return SamplerKind::kReference;
  switch (cache) {
    case CacheKind::kNone: return SamplerKind::kBlockLogits;
    case CacheKind::kPrefix: return SamplerKind::kPrefixCache;
    case CacheKind::kDual: return SamplerKind::kDualCache;
  }
  return SamplerKind::kBlockLogits;
}

SamplerMode WithSamplerKind(SamplerMode mode, SamplerKind kind) {
  CacheKind cache = CacheKind::kNone;
  DecodeRule rule = DecodeRule::kSchedule;
  generation::FastModeOf(mode, &cache, &rule);
  switch (kind) {
    case SamplerKind::kReference: return SamplerMode::kReference;
    case SamplerKind::kBlockLogits: cache = CacheKind::kNone; break;
    case SamplerKind::kPrefixCache: cache = CacheKind::kPrefix; break;
    case SamplerKind::kDualCache: cache = CacheKind::kDual; break;
  }
  // FastModeName gives the canonical name of every (cache, rule) pair.
  return *generation::ParseSamplerMode(generation::FastModeName(cache, rule));
}

}  // namespace unmask::fitting
