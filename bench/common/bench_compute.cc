#include "bench/common/bench_compute.h"

#include <cstdlib>
#include <iostream>

#include "common/model/compute_setup.h"

namespace unmask::bench {

std::string SetUpComputeOrExit(int threads, const std::string& gemm) {
  model::ComputeSetupOptions o;
  o.threads = threads;
  o.gemm = gemm;
  auto setup = model::SetUpCompute(o);
  if (!setup.ok()) {
    std::cerr << setup.status().message() << "\n";
    std::exit(2);
  }
  const std::string line = setup->cpu + " (" + setup->cpu_flags + "); " + setup->threads + "; gemm " + setup->gemm_line;
  std::cerr << "compute: " << line << "\n";
  return line;
}

}  // namespace unmask::bench
