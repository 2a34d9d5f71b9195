// Running a test on every few-row kernel path (small_gemm.h), whatever the CPU's best one: a
// path this CPU cannot run is skipped, naming what it lacks.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "common/model/cpu_features.h"
#include "common/model/small_gemm.h"

namespace unmask::model {
// Test names say "avx2", not "4-byte object <01-00 00-00>".
inline void PrintTo(GemmPath path, std::ostream* os) { *os << GemmPathName(path); }
}  // namespace unmask::model

namespace unmask::testing {

inline const auto kAllGemmPaths =
    ::testing::Values(model::GemmPath::kBlas, model::GemmPath::kAvx2, model::GemmPath::kAvx512);

// Sets the process-wide path for the scope; restores the previous one after.
class ScopedGemmPath {
 public:
  explicit ScopedGemmPath(model::GemmPath path) : previous_(model::ActiveGemmPath()) {
    ok_ = model::SetGemmPath(path).ok();
  }
  ~ScopedGemmPath() { (void)model::SetGemmPath(previous_); }
  ScopedGemmPath(const ScopedGemmPath&) = delete;
  ScopedGemmPath& operator=(const ScopedGemmPath&) = delete;
  bool ok() const { return ok_; }

 private:
  model::GemmPath previous_;
  bool ok_ = false;
};

}  // namespace unmask::testing

// GTEST_SKIP()s the calling test where this CPU cannot run `path`.
#define UNMASK_SKIP_UNLESS_GEMM_PATH_RUNS(path)                                                             \
  do {                                                                                                    \
    if (!::unmask::model::GemmPathRuns((path), ::unmask::model::HostCpuFeatures()))                      \
      GTEST_SKIP() << "this CPU (" << ::unmask::model::DescribeCpuFlags(::unmask::model::HostCpuFeatures()) \
                   << ") cannot run the " << ::unmask::model::GemmPathName(path) << " kernel";            \
  } while (0)
