#include "common/model/compute_setup.h"

#include "common/model/allocator.h"
#include "common/model/small_gemm.h"

namespace unmask::model {

StatusOr<ComputeSetup> SetUpCompute(const ComputeSetupOptions& options) {
  if (Status s = CheckMaxCpuIsa(); !s.ok()) return s;
  ComputeSetup setup;
  const CpuFeatures& cpu = HostCpuFeatures();
  if (options.gemm == "auto") {
    setup.gemm = BestGemmPath(cpu);
    setup.gemm_why = setup.gemm == GemmPath::kBlas ? "this CPU has neither AVX-512F nor AVX2+FMA"
                                                   : "the widest few-row kernel this CPU runs";
  } else {
    auto path = ParseGemmPath(options.gemm);
    if (!path.ok()) return InvalidArgumentError("--gemm: " + path.status().message());
    setup.gemm = *path;
    setup.gemm_why = "--gemm " + options.gemm + " was given";
  }
  if (Status s = SetGemmPath(setup.gemm); !s.ok()) return InvalidArgumentError("--gemm: " + s.message());
  auto threading = ConfigureThreading(options.threads, options.callers);
  if (!threading.ok()) return InvalidArgumentError(options.threads_flag + ": " + threading.status().message());
  setup.threading = *std::move(threading);
  setup.cpu = cpu.model_name.empty() ? "unknown" : cpu.model_name;
  setup.cpu_flags = DescribeCpuFlags(cpu);
  setup.threads = setup.threading.Describe();
  setup.gemm_line = std::string(GemmPathName(setup.gemm)) + " (" + setup.gemm_why + ")";
  setup.allocator = options.tune_allocator ? ConfigureAllocator() : "glibc malloc as set (this program measures glibc's defaults)";
  return setup;
}

}  // namespace unmask::model
