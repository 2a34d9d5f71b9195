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
  std::string isa_cap;  // the UNMASK_MAX_CPU_ISA value that hid the flags above it, or ""
};

// UNMASK_MAX_CPU_ISA caps what the engine uses of the CPU, as oneDNN's ONEDNN_MAX_CPU_ISA and
// PyTorch's ATEN_CPU_CAPABILITY do theirs: every choice (kernel path, Sleef forms, compute type)
// is made as if the CPU had nothing above the cap. For CPUs whose AVX-512 lowers the clock, and
// to run and time this CPU as the AVX2-only CPU it is not (tests, bench_cpu.py --max-isa).
// Values, widest first: native (no cap), avx512_bf16 (no AMX), avx512 (no bf16 instructions),
// avx2 (AVX2 + FMA + F16C: AMD Zen 3), baseline (x86-64 without AVX2: the BLAS only).
inline constexpr const char* kMaxCpuIsaVariable = "UNMASK_MAX_CPU_ISA";
// `cpu` with the flags above `cap` cleared and `isa_cap` set ("native" changes nothing);
// InvalidArgument naming UNMASK_MAX_CPU_ISA and the values for any other text.
StatusOr<CpuFeatures> CapCpuFeatures(CpuFeatures cpu, const std::string& cap);
// OK where UNMASK_MAX_CPU_ISA is unset or valid; SetUpCompute refuses to start otherwise.
Status CheckMaxCpuIsa();

// This machine's features (read once; CPUID through the compiler's builtins), capped by
// UNMASK_MAX_CPU_ISA where that is set and valid.
const CpuFeatures& HostCpuFeatures();
// "avx2 fma avx512f avx512_bf16 ..." (the flags that matter here, in lscpu's spelling), with
// "(capped by UNMASK_MAX_CPU_ISA=...)" where a cap hid some.
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
