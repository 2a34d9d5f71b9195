// Every benchmark computes as the services do: the engine's one threading model and kernel path
// (common/model/compute_setup.h), set up before the first forward and printed with the figures.
#pragma once

#include <memory>
#include <string>

#include "common/model/llada_model.h"

namespace unmask::bench {

// Sets up `threads` intra-op threads (0: the usable cores) and the kernel path `gemm` (auto,
// avx512, avx2, blas) and glibc's malloc thresholds as the services set them (tune_allocator false:
// glibc's defaults); exits with 2 naming the flag on a bad value. Returns a one-line summary.
std::string SetUpComputeOrExit(int threads = 0, const std::string& gemm = "auto", bool tune_allocator = true);

// The checkpoint at `dir` in `precision` (fp32, bf16, or auto: the compute type the services pick
// for this CPU, or for a GPU where `base.device` is one), with `base`'s other options (device, CUDA
// graphs, fused kernels); exits with 1 printing the error when it does not load, 2 on a bad
// precision or device.
std::unique_ptr<model::LladaModel> LoadModelOrExit(const std::string& dir, const std::string& precision,
                                                   const model::ModelOptions& base = {});

// The line under a table: the machine, lscpu's model name and the flags that matter, the compute
// summary (SetUpComputeOrExit's), today's date (UTC) and the command that reproduces it.
std::string MachineFooter(const std::string& compute, int argc, char** argv);

}  // namespace unmask::bench
