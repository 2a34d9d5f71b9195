// What every binary that computes sets up before its first forward pass, in one call: the
// threading model (threading.h), the few-row kernel path (small_gemm.h), chosen from the CPU
// (cpu_features.h) unless a flag says otherwise, and glibc's malloc thresholds (allocator.h);
// each described for the start-up log.
#pragma once

#include <string>

#include "common/model/cpu_features.h"
#include "common/model/threading.h"
#include "common/util/status.h"

namespace unmask::model {

struct ComputeSetupOptions {
  int threads = 0;            // intra-op threads per forward pass; 0: the usable cores / callers
  int callers = 1;            // threads that run forward passes at once (the executor's workers)
  std::string gemm = "auto";  // auto | avx512 | avx2 | blas
  std::string threads_flag = "--threads";  // the binary's name for `threads`, for errors
  bool tune_allocator = true;  // allocator.h; false keeps glibc's defaults (bench_memory's first measurement)
};

struct ComputeSetup {
  ThreadingReport threading;
  GemmPath gemm = GemmPath::kBlas;
  std::string gemm_why;
  // For the start-up log: the CPU's model name and flags, the threading and the kernel path, each
  // with why it was chosen.
  std::string cpu, cpu_flags, threads, gemm_line, allocator;
};

// InvalidArgument naming the flag (--threads, --gemm) or UNMASK_MAX_CPU_ISA for a bad value or a path this CPU
// cannot run.
StatusOr<ComputeSetup> SetUpCompute(const ComputeSetupOptions& options);

}  // namespace unmask::model
