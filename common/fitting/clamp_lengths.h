// The length search of clamp.cc, apart so that it can be tested on its own: which
// (gen_length, block_length) pair to run when the asked one is too long or too large.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

namespace unmask::fitting {

struct Lengths {
  std::int64_t gen = 0;
  std::int64_t block = 0;
};

// Among gen in [floor, max_gen] and block dividing gen with block <= asked_block, for which
// fits(gen, block) holds:
//  1. keeping asked_block: the largest multiple of it (when asked_block <= max_gen);
//  2. otherwise the largest gen, then the largest block dividing it.
// fits must be monotone (a smaller gen or block never needs more memory). nullopt: nothing fits.
std::optional<Lengths> ChooseLengths(std::int64_t max_gen, std::int64_t asked_block, std::int64_t floor,
                                     const std::function<bool(std::int64_t gen, std::int64_t block)>& fits);

}  // namespace unmask::fitting
