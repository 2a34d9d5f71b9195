// What the memory model needs to know about a sampler mode (common/generation/sampler_mode.h):
// which rows get logits and whether a KV cache is kept. The decoding rule (threshold / factor)
// does not change the memory: a mode counts as its cache kind.
#pragma once

#include "common/generation/sampler_mode.h"

namespace unmask::fitting {

enum class SamplerKind {
  kReference,    // full forward and logits for every row, every step
  kBlockLogits,  // full forward every step, logits for the current block only
  kPrefixCache,  // + K/V of every layer kept between steps
  kDualCache,    // + K/V of every layer kept between steps
  kLlada2,       // llada2, llada21: the window padded to whole blocks, its K/V kept, logits for the block
};
const char* SamplerKindName(SamplerKind kind);  // "reference", "block_logits", ...

SamplerKind SamplerKindOf(generation::SamplerMode mode);

// The mode that keeps the decoding rule of `mode` with cache kind `kind`:
// WithSamplerKind(kThreshold, kDualCache) == kDualCacheThreshold;
// WithSamplerKind(kReference, kDualCache) == kDualCache. kReference gives kReference (the
// reference has no rule, a threshold/factor rule cannot be kept there). kLlada2 is the one mode of
// its models: it gives kLlada2 whatever the kind, and no kind gives it.
generation::SamplerMode WithSamplerKind(generation::SamplerMode mode, SamplerKind kind);

}  // namespace unmask::fitting
