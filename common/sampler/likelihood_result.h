// What a likelihood estimate returns (common/sampler/likelihood.h), without LibTorch: the
// executor's job events carry it.
#pragma once

#include <cstdint>
#include <optional>

namespace unmask::sampler {

struct LikelihoodResult {
  double loglikelihood = 0;   // minus the mean of the draws' losses
  double standard_error = 0;  // of that mean over the draws (0 with one draw)
  std::optional<bool> greedy;  // check_greedy: the continuation is the greedy unmasking's
  std::int64_t samples = 0;    // rows drawn (draws x batch_size)
  std::int64_t continuation_tokens = 0;
  std::int64_t forwards = 0;
  std::int64_t rows_per_forward = 0;  // the most samples one forward ran
};

}  // namespace unmask::sampler
