// What the memory model needs to know about a sampler mode: which rows get logits and whether a
// KV cache is kept. The mode names are those of common/sampler/sampler_registry.h, repeated here
// because that library needs LibTorch and this one must not (tests/memory checks that the two
// lists agree).
#pragma once

#include <string>
#include <vector>

#include "common/util/status.h"

namespace unmask::memory {

enum class SamplerKind {
  kReference,    // full forward and logits for every row, every step
  kBlockLogits,  // full forward every step, logits for the current block only
  kPrefixCache,  // + K/V of every layer kept between steps
  kDualCache,    // + K/V of every layer kept between steps
};
const char* SamplerKindName(SamplerKind kind);  // "reference", "block_logits", ...

// The kind of a sampler mode name: "reference", "block_logits", "prefix_cache", "dual_cache",
// "threshold", "factor", "block_logits+threshold", "block_logits+factor",
// "prefix_cache+threshold", "prefix_cache+factor", "dual_cache+threshold", "dual_cache+factor".
// The decoding rule (threshold / factor) does not change the memory: a mode counts as its cache
// kind. InvalidArgument lists the names.
StatusOr<SamplerKind> SamplerKindOf(const std::string& mode);

// The mode name that keeps the decoding rule of `mode` (a valid name) with cache kind `kind`:
// WithSamplerKind("threshold", kDualCache) == "dual_cache+threshold";
// WithSamplerKind("reference", kDualCache) == "dual_cache". kReference gives "reference" (the
// reference has no rule, a threshold/factor rule cannot be kept there).
std::string WithSamplerKind(const std::string& mode, SamplerKind kind);

// Every accepted mode name, canonical spelling (the list of sampler_registry.h, in its order).
const std::vector<std::string>& SamplerModeNames();

}  // namespace unmask::memory
