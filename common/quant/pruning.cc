#include "common/quant/pruning.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/quant/convert.h"

namespace unmask::weights {

namespace {

inline std::uint32_t MagnitudeKey(float v) { return FloatBits(v) & 0x7fffffffu; }

// Calls visit(index, key) for every element, chunk by chunk.
template <typename Visit>
Status ForEachKey(std::int64_t numel, const F32ChunkReader& read, float* scratch, std::int64_t chunk_elems,
                  Visit visit) {
  for (std::int64_t begin = 0; begin < numel; begin += chunk_elems) {
    const std::int64_t count = std::min(chunk_elems, numel - begin);
    UNMASK_RETURN_IF_ERROR(read(begin, count, scratch));
    for (std::int64_t i = 0; i < count; ++i) {
      if (!visit(begin + i, MagnitudeKey(scratch[i]))) return OkStatus();
    }
  }
  return OkStatus();
}

// The bucket holding the rank-th smallest key (rank is 1-based); *before gets the count of keys
// in lower buckets.
std::size_t SelectBucket(const std::vector<std::int64_t>& hist, std::int64_t rank, std::int64_t* before) {
  std::int64_t cumulative = 0;
  for (std::size_t b = 0; b < hist.size(); ++b) {
    if (cumulative + hist[b] >= rank) {
      *before = cumulative;
      return b;
    }
    cumulative += hist[b];
  }
  *before = cumulative;
  return hist.size() - 1;  // unreachable for 1 <= rank <= numel
}

}  // namespace

float PrunePlan::threshold() const { return BitsToFloat(threshold_bits); }

Status ValidatePruneRatio(double ratio) {
  if (!(ratio >= 0.0 && ratio <= 1.0))
    return InvalidArgumentError("prune ratio " + std::to_string(ratio) + " is not in [0, 1]");
  return OkStatus();
}

StatusOr<PrunePlan> PlanMagnitudePruning(std::int64_t numel, double ratio, const F32ChunkReader& read, float* scratch,
                                         std::int64_t chunk_elems) {
  UNMASK_RETURN_IF_ERROR(ValidatePruneRatio(ratio));
  if (numel < 0) return InvalidArgumentError("pruning: negative element count");
  const auto k = static_cast<std::int64_t>(std::floor(ratio * static_cast<double>(numel)));
  return PlanPruneCount(numel, std::min(k, numel), read, scratch, chunk_elems);
}

StatusOr<PrunePlan> PlanPruneCount(std::int64_t numel, std::int64_t k, const F32ChunkReader& read, float* scratch,
                                   std::int64_t chunk_elems) {
  if (numel < 0 || k < 0 || k > numel || chunk_elems <= 0)
    return InvalidArgumentError("pruning: invalid element, prune or chunk count");
  PrunePlan plan;
  plan.numel = numel;
  plan.pruned = k;
  if (plan.pruned == 0) return plan;

  // Level 1: the high 15 bits of the 31-bit key.
  std::vector<std::int64_t> high(1u << 15, 0);
  UNMASK_RETURN_IF_ERROR(ForEachKey(numel, read, scratch, chunk_elems, [&](std::int64_t, std::uint32_t key) {
    ++high[key >> 16];
    return true;
  }));
  std::int64_t less_high = 0;
  const std::uint32_t bucket = static_cast<std::uint32_t>(SelectBucket(high, plan.pruned, &less_high));

  // Level 2: the low 16 bits, among keys of that bucket.
  std::vector<std::int64_t> low(1u << 16, 0);
  UNMASK_RETURN_IF_ERROR(ForEachKey(numel, read, scratch, chunk_elems, [&](std::int64_t, std::uint32_t key) {
    if ((key >> 16) == bucket) ++low[key & 0xffffu];
    return true;
  }));
  std::int64_t less_low = 0;
  const std::uint32_t low_bits = static_cast<std::uint32_t>(SelectBucket(low, plan.pruned - less_high, &less_low));
  plan.threshold_bits = (bucket << 16) | low_bits;
  const std::int64_t ties_needed = plan.pruned - less_high - less_low;
  const std::int64_t ties_total = low[low_bits];
  if (ties_needed == ties_total) {
    plan.last_tie_index = numel - 1;
    return plan;
  }
  // Level 3: the position of the ties_needed-th tie.
  std::int64_t seen = 0;
  UNMASK_RETURN_IF_ERROR(ForEachKey(numel, read, scratch, chunk_elems, [&](std::int64_t index, std::uint32_t key) {
    if (key == plan.threshold_bits && ++seen == ties_needed) {
      plan.last_tie_index = index;
      return false;
    }
    return true;
  }));
  return plan;
}

std::int64_t ApplyPrunePlan(const PrunePlan& plan, std::int64_t begin, float* w, std::int64_t count) {
  if (plan.pruned == 0) return 0;
  std::int64_t zeroed = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint32_t key = MagnitudeKey(w[i]);
    const bool prune = key < plan.threshold_bits || (key == plan.threshold_bits && begin + i <= plan.last_tie_index);
    zeroed += prune;
    w[i] = prune ? 0.0f : w[i];
  }
  return zeroed;
}

StatusOr<std::int64_t> PruneByMagnitude(float* w, std::int64_t n, double ratio) {
  F32ChunkReader read = [w](std::int64_t begin, std::int64_t count, float* dst) {
    std::memcpy(dst, w + begin, static_cast<std::size_t>(count) * sizeof(float));
    return OkStatus();
  };
  constexpr std::int64_t kChunk = 1 << 16;
  std::vector<float> scratch(static_cast<std::size_t>(std::min<std::int64_t>(kChunk, std::max<std::int64_t>(n, 1))));
  UNMASK_ASSIGN_OR_RETURN(
      PrunePlan plan, PlanMagnitudePruning(n, ratio, read, scratch.data(), static_cast<std::int64_t>(scratch.size())));
  return ApplyPrunePlan(plan, 0, w, n);
}

}  // namespace unmask::weights
