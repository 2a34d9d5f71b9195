// Every benchmark computes as the services do: the engine's one threading model and kernel path
// (common/model/compute_setup.h), set up before the first forward and printed with the figures.
#pragma once

#include <string>

namespace unmask::bench {

// Sets up `threads` intra-op threads (0: the usable cores) and the kernel path `gemm` (auto,
// avx512, avx2, blas); exits with 2 naming the flag on a bad value. Returns a one-line summary.
std::string SetUpComputeOrExit(int threads = 0, const std::string& gemm = "auto");

}  // namespace unmask::bench
