// Magnitude pruning of one weight tensor (off by default; see PrecisionSpec::prune_ratio).
//
// Contract: exactly k = floor(ratio * n) elements are set to +0, namely those of smallest |w|.
// Ties at the threshold magnitude are broken by position (lowest flat index pruned first), so
// the result is deterministic. Elements are ordered by the bit pattern of |w|, so -0 == +0 and
// NaN counts as larger than any number (pruned only when everything is).
//
// The plan is found by a two-level radix select over those bit patterns, reading the tensor as
// f32 chunks through a callback, so a bf16 tensor in a mapped file is pruned without a full f32
// copy: two passes (a third only when the threshold value is tied and the ties are split).
#pragma once

#include <cstdint>
#include <functional>

#include "common/util/status.h"

namespace unmask::weights {

struct PrunePlan {
  std::int64_t numel = 0;
  std::int64_t pruned = 0;           // k
  std::uint32_t threshold_bits = 0;  // bit pattern of |w| at the threshold
  // Elements whose |w| equals the threshold are pruned up to and including this flat index.
  std::int64_t last_tie_index = -1;

  float threshold() const;
};

// Reads elements [begin, begin + count) of the tensor as f32 into dst.
using F32ChunkReader = std::function<Status(std::int64_t begin, std::int64_t count, float* dst)>;

// InvalidArgument unless 0 <= ratio <= 1.
Status ValidatePruneRatio(double ratio);

// Plans the pruning of a tensor of `numel` elements; `scratch` holds `chunk_elems` floats.
StatusOr<PrunePlan> PlanMagnitudePruning(std::int64_t numel, double ratio, const F32ChunkReader& read, float* scratch,
                                         std::int64_t chunk_elems);

// Same, with the number of elements to prune (0 <= k <= numel) given directly.
StatusOr<PrunePlan> PlanPruneCount(std::int64_t numel, std::int64_t k, const F32ChunkReader& read, float* scratch,
                                   std::int64_t chunk_elems);

// Zeroes the pruned elements among w[0, count), which are elements [begin, begin + count) of
// the planned tensor. Returns how many were zeroed.
std::int64_t ApplyPrunePlan(const PrunePlan& plan, std::int64_t begin, float* w, std::int64_t count);

// In-memory pruning of w[0, n); returns the number of elements zeroed (== floor(ratio * n)).
StatusOr<std::int64_t> PruneByMagnitude(float* w, std::int64_t n, double ratio);

}  // namespace unmask::weights
