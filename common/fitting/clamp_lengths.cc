#include "common/fitting/clamp_lengths.h"

#include <algorithm>
#include <vector>

namespace unmask::fitting {
namespace {

// Divisors of n that are <= limit, largest first.
std::vector<std::int64_t> DivisorsDescending(std::int64_t n, std::int64_t limit) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 1; i * i <= n; ++i) {
    if (n % i != 0) continue;
    if (i <= limit) out.push_back(i);
    if (n / i != i && n / i <= limit) out.push_back(n / i);
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

}  // namespace

std::optional<Lengths> ChooseLengths(std::int64_t max_gen, std::int64_t asked_block, std::int64_t floor,
                                     const std::function<bool(std::int64_t, std::int64_t)>& fits) {
  floor = std::max<std::int64_t>(floor, 1);
  if (max_gen < floor || asked_block < 1) return std::nullopt;
  if (asked_block <= max_gen) {
    // Memory grows with the number of blocks: binary search the largest count that fits.
    std::int64_t lo = (floor + asked_block - 1) / asked_block, hi = max_gen / asked_block, best = 0;
    lo = std::max<std::int64_t>(lo, 1);
    while (lo <= hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (fits(mid * asked_block, asked_block)) {
        best = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    if (best > 0) return Lengths{best * asked_block, asked_block};
  }
  // No gen fits with some block unless it fits with block 1: start from the largest such gen.
  std::int64_t lo = floor, hi = max_gen, top = 0;
  while (lo <= hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (fits(mid, 1)) {
      top = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  for (std::int64_t gen = top; gen >= floor && top > 0; --gen) {
    for (std::int64_t block : DivisorsDescending(gen, asked_block)) {
      if (fits(gen, block)) return Lengths{gen, block};
    }
  }
  return std::nullopt;
}

}  // namespace unmask::fitting
