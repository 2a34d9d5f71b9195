// How many masked tokens each step of a block unmasks: the official schedule, base = M // S per
// step, the first M % S steps one more.
#pragma once

#include <cstdint>
#include <vector>

namespace unmask::sampler {

std::vector<std::int64_t> NumTransferTokens(std::int64_t masked_in_block, std::int64_t steps);

}  // namespace unmask::sampler
