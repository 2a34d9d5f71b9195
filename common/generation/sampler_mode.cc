#include "common/generation/sampler_mode.h"

namespace unmask::generation {

const char* FastModeName(CacheKind cache, DecodeRule rule) {
  static const char* const kNames[3][3] = {
      {"block_logits", "threshold", "factor"},
      {"prefix_cache", "prefix_cache+threshold", "prefix_cache+factor"},
      {"dual_cache", "dual_cache+threshold", "dual_cache+factor"},
  };
  return kNames[static_cast<int>(cache)][static_cast<int>(rule)];
}

const std::vector<SamplerMode>& LladaSamplerModes() {
  static const std::vector<SamplerMode> kModes = {
      SamplerMode::kReference,          SamplerMode::kBlockLogits,        SamplerMode::kPrefixCache,
      SamplerMode::kDualCache,          SamplerMode::kThreshold,          SamplerMode::kPrefixCacheThreshold,
      SamplerMode::kDualCacheThreshold, SamplerMode::kFactor,             SamplerMode::kPrefixCacheFactor,
      SamplerMode::kDualCacheFactor,
  };
  return kModes;
}

const std::vector<SamplerMode>& AllSamplerModes() {
  static const std::vector<SamplerMode> kModes = [] {
    std::vector<SamplerMode> all = LladaSamplerModes();
    all.push_back(SamplerMode::kLlada2);
    all.push_back(SamplerMode::kLlada21);
    for (SamplerMode m : {SamplerMode::kDream, SamplerMode::kDreamPrefixCache, SamplerMode::kDreamDualCache,
                          SamplerMode::kDreamPrefixCacheThreshold, SamplerMode::kDreamDualCacheThreshold,
                          SamplerMode::kDreamFastdllm, SamplerMode::kDreamFastdllmThreshold})
      all.push_back(m);
    return all;
  }();
  return kModes;
}

bool IsBlockDiffusion(SamplerMode mode) { return mode == SamplerMode::kLlada2 || mode == SamplerMode::kLlada21; }

bool DreamCacheModeOf(SamplerMode mode, CacheKind* cache, DecodeRule* rule) {
  switch (mode) {
    case SamplerMode::kDreamPrefixCache: *cache = CacheKind::kPrefix; *rule = DecodeRule::kSchedule; return true;
    case SamplerMode::kDreamDualCache: *cache = CacheKind::kDual; *rule = DecodeRule::kSchedule; return true;
    case SamplerMode::kDreamPrefixCacheThreshold: *cache = CacheKind::kPrefix; *rule = DecodeRule::kThreshold; return true;
    case SamplerMode::kDreamDualCacheThreshold: *cache = CacheKind::kDual; *rule = DecodeRule::kThreshold; return true;
    case SamplerMode::kDreamFastdllm: *cache = CacheKind::kNone; *rule = DecodeRule::kSchedule; return true;
    case SamplerMode::kDreamFastdllmThreshold: *cache = CacheKind::kNone; *rule = DecodeRule::kThreshold; return true;
    default: return false;
  }
}

bool IsDreamFamily(SamplerMode mode) {
  CacheKind cache;
  DecodeRule rule;
  return mode == SamplerMode::kDream || DreamCacheModeOf(mode, &cache, &rule);
}

bool HasNoBlocks(SamplerMode mode) {
  return mode == SamplerMode::kDream || mode == SamplerMode::kDreamFastdllm || mode == SamplerMode::kDreamFastdllmThreshold;
}

bool FastModeOf(SamplerMode mode, CacheKind* cache, DecodeRule* rule) {
  switch (mode) {
    case SamplerMode::kReference:
    case SamplerMode::kLlada2:
    case SamplerMode::kLlada21:
    case SamplerMode::kDream:
    case SamplerMode::kDreamPrefixCache:
    case SamplerMode::kDreamDualCache:
    case SamplerMode::kDreamPrefixCacheThreshold:
    case SamplerMode::kDreamDualCacheThreshold:
    case SamplerMode::kDreamFastdllm:
    case SamplerMode::kDreamFastdllmThreshold: return false;
    case SamplerMode::kBlockLogits: *cache = CacheKind::kNone; *rule = DecodeRule::kSchedule; return true;
    case SamplerMode::kPrefixCache: *cache = CacheKind::kPrefix; *rule = DecodeRule::kSchedule; return true;
    case SamplerMode::kDualCache: *cache = CacheKind::kDual; *rule = DecodeRule::kSchedule; return true;
    case SamplerMode::kThreshold: *cache = CacheKind::kNone; *rule = DecodeRule::kThreshold; return true;
    case SamplerMode::kPrefixCacheThreshold: *cache = CacheKind::kPrefix; *rule = DecodeRule::kThreshold; return true;
    case SamplerMode::kDualCacheThreshold: *cache = CacheKind::kDual; *rule = DecodeRule::kThreshold; return true;
    case SamplerMode::kFactor: *cache = CacheKind::kNone; *rule = DecodeRule::kFactor; return true;
    case SamplerMode::kPrefixCacheFactor: *cache = CacheKind::kPrefix; *rule = DecodeRule::kFactor; return true;
    case SamplerMode::kDualCacheFactor: *cache = CacheKind::kDual; *rule = DecodeRule::kFactor; return true;
  }
  return false;
}

const char* SamplerModeName(SamplerMode mode) {
  if (mode == SamplerMode::kLlada2) return "llada2";
  if (mode == SamplerMode::kLlada21) return "llada21";
  if (mode == SamplerMode::kDream) return "dream";
  switch (mode) {
    case SamplerMode::kDreamPrefixCache: return "dream_prefix_cache";
    case SamplerMode::kDreamDualCache: return "dream_dual_cache";
    case SamplerMode::kDreamPrefixCacheThreshold: return "dream_prefix_cache+threshold";
    case SamplerMode::kDreamDualCacheThreshold: return "dream_dual_cache+threshold";
    case SamplerMode::kDreamFastdllm: return "dream_fastdllm";
    case SamplerMode::kDreamFastdllmThreshold: return "dream_fastdllm+threshold";
    default: break;
  }
  CacheKind cache;
  DecodeRule rule;
  if (!FastModeOf(mode, &cache, &rule)) return "reference";
  return FastModeName(cache, rule);
}

StatusOr<SamplerMode> ParseSamplerMode(const std::string& text) {
  if (text == "block_logits+threshold") return SamplerMode::kThreshold;
  if (text == "block_logits+factor") return SamplerMode::kFactor;
  std::string names;
  for (SamplerMode m : AllSamplerModes()) {
    if (text == SamplerModeName(m)) return m;
    names += names.empty() ? "" : ", ";
    names += SamplerModeName(m);
  }
  return InvalidFieldError("sampler", "'" + text + "' is not one of " + names);
}

}  // namespace unmask::generation
