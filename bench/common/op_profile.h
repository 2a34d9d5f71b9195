// Where a benchmark's time goes, by ATen operator: a global RecordFunction callback sums each
// top-level operator's wall time (an operator called inside another is counted in its caller), on
// every thread, while an OpProfile is alive. For profiling runs only: the callback costs a few
// microseconds per operator.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>

namespace unmask::bench {

class OpProfile {
 public:
  OpProfile();  // starts counting
  ~OpProfile();  // stops
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;
  // The `top` operators by total time: calls, total ms, share of the summed time, us per call.
  void Print(std::ostream& out, int top = 25) const;

 private:
  std::uint64_t handle_;
};

}  // namespace unmask::bench
