#include "common/sampler/transfer_schedule.h"

namespace unmask::sampler {

std::vector<std::int64_t> NumTransferTokens(std::int64_t masked_in_block, std::int64_t steps) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(steps), masked_in_block / steps);
  const std::int64_t remainder = masked_in_block % steps;
  for (std::int64_t i = 0; i < remainder; ++i) ++out[static_cast<std::size_t>(i)];
  return out;
}

}  // namespace unmask::sampler
