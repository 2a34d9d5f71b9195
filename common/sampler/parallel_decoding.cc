#include "common/sampler/parallel_decoding.h"

namespace unmask::sampler {

std::int64_t ThresholdCount(const std::vector<double>& c, double threshold) {
  if (c.empty()) return 0;
  std::int64_t n = 1;  // the most confident token goes regardless
  while (n < static_cast<std::int64_t>(c.size()) && c[n] >= threshold) ++n;
  return n;
}

std::int64_t FactorCount(const std::vector<double>& c, double factor) {
  if (c.empty()) return 0;
  std::int64_t n = 1;  // c_1 always passes (the official code sets its bound to -1)
  // Candidate n + 1 (1-based) passes when c_{n+1} >= 1 - factor / (n + 2).
  const auto m = static_cast<std::int64_t>(c.size());
  while (n < m && c[n] >= 1.0 - factor / static_cast<double>(n + 2)) ++n;
  // Fast-dLLM's loop cannot tell "only the last one failed" from "all passed": both unmask all m.
  return n == m - 1 ? m : n;
}

}  // namespace unmask::sampler
