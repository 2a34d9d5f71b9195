// What this CPU can do, and the choices the engine makes from it: which few-row kernel runs
// (small_gemm.h) and which type the arithmetic runs in. The choices are pure functions of the
// features, so tests can ask "given these flags, which choice" on any machine; an explicit flag
// (--gemm, --precision) always wins over them.
#pragma once

#include <optional>
#include <string>

#include "common/model/model_options.h"
#include "common/util/status.h"

namespace unmask::model {

struct CpuFeatures {
  std::string model_name;  // /proc/cpuinfo's "model name" (lscpu's), or "" where unknown
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512_bf16 = false;
  bool amx_bf16 = false;
};

// This machine's features (read once; CPUID through the compiler's builtins).
const CpuFeatures& HostCpuFeatures();
// "avx2 fma avx512f avx512_bf16 ..." (the flags that matter here, in lscpu's spelling).
std::string DescribeCpuFlags(const CpuFeatures& cpu);
// True where the CPU has bf16 dot-product instructions (AVX512_BF16 or AMX-BF16): bf16
// arithmetic runs natively instead of being emulated with conversions.
bool HasNativeBf16(const CpuFeatures& cpu);

// The few-row float32 kernels (small_gemm.h): the widest this CPU runs, or the BLAS.
enum class GemmPath { kBlas, kAvx2, kAvx512 };
const char* GemmPathName(GemmPath path);  // "blas" | "avx2" | "avx512"
StatusOr<GemmPath> ParseGemmPath(const std::string& text);
bool GemmPathRuns(GemmPath path, const CpuFeatures& cpu);
GemmPath BestGemmPath(const CpuFeatures& cpu);

// The type the arithmetic runs in, and why.
struct ComputeChoice {
  Precision compute = Precision::kFloat32;
  std::string why;
};
// `requested`: the --precision flag; nullopt for "auto". `on_gpu`: computing on a CUDA device.
// `stored`: the weights' storage type (dense; quantized weights are stored as int8/int4 and
// dequantized to bf16 or fp32 by the compute type, and count as bf16). Auto on a CPU: bf16 where
// the CPU has bf16 instructions and the weights are bf16, fp32 everywhere else.
ComputeChoice ChooseCompute(std::optional<Precision> requested, const CpuFeatures& cpu, bool on_gpu,
                            Precision stored);

}  // namespace unmask::model
