// The sampler modes and their names (no LibTorch): one list for every door and for the memory
// model; common/sampler/sampler_registry.h runs them.
//
//   reference                the official generate() (reference_sampler.h)
//   block_logits             logits/softmax for the current block only (block_logits_sampler.h)
//   prefix_cache             + prefix KV cache refreshed per block (prefix_cache_sampler.h)
//   dual_cache               + prefix and suffix KV cache (dual_cache_sampler.h)
//   threshold, factor        block_logits with a parallel decoding rule (parallel_decoding.h);
//                            "block_logits+threshold" / "block_logits+factor" are accepted too
//   prefix_cache+threshold, prefix_cache+factor, dual_cache+threshold, dual_cache+factor
//   llada2                   LLaDA2.0's block diffusion (common/sampler/llada2_sampler.h)
//   llada21                  LLaDA2.1's: the same with token editing
//   The two block-diffusion modes are the modes of LLaDA2 models (block-causal attention), which
//   no LLaDA mode fits.
//   dream                    Dream's diffusion_generate (common/sampler/dream_sampler.h)
//   dream_prefix_cache, dream_dual_cache, dream_prefix_cache+threshold, dream_dual_cache+threshold
//                            Fast-dLLM's Dream sampler with its caches and confidence threshold
//                            (common/sampler/dream_cache_sampler.h)
//   dream_fastdllm, dream_fastdllm+threshold
//                            the same sampler without a cache: its round-half-even schedule over
//                            the whole generation, or its threshold rule
//   The Dream modes are the modes of Dream models (shifted prediction), and theirs only.
#pragma once

#include <string>
#include <vector>

#include "common/util/status.h"

namespace unmask::generation {

enum class CacheKind { kNone, kPrefix, kDual };      // block_logits, prefix_cache, dual_cache
enum class DecodeRule { kSchedule, kThreshold, kFactor };

enum class SamplerMode {
  kReference,
  kBlockLogits,
  kPrefixCache,
  kDualCache,
  kThreshold,
  kPrefixCacheThreshold,
  kDualCacheThreshold,
  kFactor,
  kPrefixCacheFactor,
  kDualCacheFactor,
  kLlada2,
  kLlada21,
  kDream,
  kDreamPrefixCache,
  kDreamDualCache,
  kDreamPrefixCacheThreshold,
  kDreamDualCacheThreshold,
  kDreamFastdllm,
  kDreamFastdllmThreshold,
};

// Every mode, in the order above.
const std::vector<SamplerMode>& AllSamplerModes();
// The modes of LLaDA and LLaDA-MoE models: every mode but the block-diffusion ones.
const std::vector<SamplerMode>& LladaSamplerModes();
// kLlada2 or kLlada21: LLaDA2's block diffusion (its own options, steps per block, padded canvas).
bool IsBlockDiffusion(SamplerMode mode);
// dream or one of Fast-dLLM's Dream modes: the modes of Dream models.
bool IsDreamFamily(SamplerMode mode);
// dream, dream_fastdllm and dream_fastdllm+threshold: no blocks (block_length is gen_length) and
// `steps` are all the steps, over the whole generation.
bool HasNoBlocks(SamplerMode mode);
// The cache and rule of Fast-dLLM's Dream modes (false for the others, dream included).
bool DreamCacheModeOf(SamplerMode mode, CacheKind* cache, DecodeRule* rule);
StatusOr<SamplerMode> ParseSamplerMode(const std::string& text);  // error lists the names
const char* SamplerModeName(SamplerMode mode);

// "block_logits", "prefix_cache", "dual_cache", "threshold", "prefix_cache+threshold", ... —
// a static string (GenerationResult::sampler points at it).
const char* FastModeName(CacheKind cache, DecodeRule rule);

// The cache kind and decoding rule of a fast mode (kReference and the block-diffusion modes have
// neither: returns false).
bool FastModeOf(SamplerMode mode, CacheKind* cache, DecodeRule* rule);

}  // namespace unmask::generation
