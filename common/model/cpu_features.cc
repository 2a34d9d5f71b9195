#include "common/model/cpu_features.h"

#include <cpuid.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

namespace unmask::model {
namespace {

std::string ReadModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

CpuFeatures Detect() {
  CpuFeatures c;
  c.model_name = ReadModelName();
  __builtin_cpu_init();
  // The builtins also check that the OS saves the wide registers (XSAVE state), not only CPUID.
  c.avx2 = __builtin_cpu_supports("avx2");
  c.fma = __builtin_cpu_supports("fma");
  c.avx512f = __builtin_cpu_supports("avx512f");
  c.avx512bw = __builtin_cpu_supports("avx512bw");
  unsigned a = 0, b = 0, cx = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &cx, &d)) c.f16c = (cx & bit_F16C) != 0;
  if (__get_cpuid_count(7, 0, &a, &b, &cx, &d)) c.amx_bf16 = c.avx512f && (d & (1u << 22)) != 0;
  if (__get_cpuid_count(7, 1, &a, &b, &cx, &d)) c.avx512_bf16 = c.avx512f && (a & (1u << 5)) != 0;
  return c;
}

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

}  // namespace

StatusOr<CpuFeatures> CapCpuFeatures(CpuFeatures cpu, const std::string& cap) {
  const std::string value = Lower(cap);
  // Each cap clears what the next wider one keeps.
  const char* const caps[] = {"native", "avx512_bf16", "avx512", "avx2", "baseline"};
  const auto* found = std::find(std::begin(caps), std::end(caps), value);
  if (found == std::end(caps))
    return InvalidArgumentError(std::string(kMaxCpuIsaVariable) + ": '" + cap +
                                "' is not one of native, avx512_bf16, avx512, avx2, baseline");
  const auto level = found - std::begin(caps);
  if (level == 0) return cpu;
  cpu.isa_cap = value;
  cpu.amx_bf16 = false;
  if (level >= 2) cpu.avx512_bf16 = false;
  if (level >= 3) cpu.avx512f = cpu.avx512bw = false;
  if (level >= 4) cpu.avx2 = cpu.fma = cpu.f16c = false;
  return cpu;
}

Status CheckMaxCpuIsa() {
  const char* cap = std::getenv(kMaxCpuIsaVariable);
  if (cap == nullptr) return OkStatus();
  return CapCpuFeatures(CpuFeatures{}, cap).status();
}

const CpuFeatures& HostCpuFeatures() {
  static const CpuFeatures features = [] {
    CpuFeatures detected = Detect();
    const char* cap = std::getenv(kMaxCpuIsaVariable);
    if (cap == nullptr) return detected;
    auto capped = CapCpuFeatures(detected, cap);
    return capped.ok() ? *std::move(capped) : detected;  // an invalid cap: SetUpCompute refuses to start
  }();
  return features;
}

std::string DescribeCpuFlags(const CpuFeatures& cpu) {
  std::string out;
  auto add = [&out](bool has, const char* name) {
    if (!has) return;
    if (!out.empty()) out += ' ';
    out += name;
  };
  add(cpu.avx2, "avx2");
  add(cpu.fma, "fma");
  add(cpu.f16c, "f16c");
  add(cpu.avx512f, "avx512f");
  add(cpu.avx512bw, "avx512bw");
  add(cpu.avx512_bf16, "avx512_bf16");
  add(cpu.amx_bf16, "amx_bf16");
  if (out.empty()) out = "none of avx2 fma avx512f avx512_bf16 amx_bf16";
  if (!cpu.isa_cap.empty()) out += std::string(" (capped by ") + kMaxCpuIsaVariable + "=" + cpu.isa_cap + ")";
  return out;
}

bool HasNativeBf16(const CpuFeatures& cpu) { return cpu.avx512_bf16 || cpu.amx_bf16; }

const char* GemmPathName(GemmPath path) {
  switch (path) {
    case GemmPath::kAvx2: return "avx2";
    case GemmPath::kAvx512: return "avx512";
    case GemmPath::kBlas: break;
  }
  return "blas";
}

StatusOr<GemmPath> ParseGemmPath(const std::string& text) {
  if (text == "blas") return GemmPath::kBlas;
  if (text == "avx2") return GemmPath::kAvx2;
  if (text == "avx512") return GemmPath::kAvx512;
  return InvalidArgumentError("gemm path '" + text + "' is not one of auto, avx512, avx2, blas");
}

bool GemmPathRuns(GemmPath path, const CpuFeatures& cpu) {
  switch (path) {
    case GemmPath::kAvx512: return cpu.avx512f && cpu.fma;
    case GemmPath::kAvx2: return cpu.avx2 && cpu.fma;
    case GemmPath::kBlas: break;
  }
  return true;
}

GemmPath BestGemmPath(const CpuFeatures& cpu) {
  for (GemmPath p : {GemmPath::kAvx512, GemmPath::kAvx2})
    if (GemmPathRuns(p, cpu)) return p;
  return GemmPath::kBlas;
}

ComputeChoice ChooseCompute(std::optional<Precision> requested, const CpuFeatures& cpu, bool on_gpu, Precision stored) {
  if (requested) return {*requested, std::string("--precision ") + PrecisionName(*requested) + " was given"};
  if (on_gpu) {
    if (stored == Precision::kFloat16) return {Precision::kFloat16, "GPU, weights stored as fp16: fp16 tensor cores"};
    return {Precision::kBFloat16, "GPU: bf16 tensor cores"};
  }
  // On a CPU without bf16 instructions LibTorch's bf16 operators convert element by element (5x
  // slower than fp32 on an AVX2 EPYC): fp32, with the weights left in their storage type (the
  // few-row kernels widen bf16 in registers). With them (oneDNN's bf16 matmuls), bf16 weights
  // are computed in bf16: 1.1x fp32 on a Zen 4 EPYC (docs/benchmarks.md, "CPU table").
  if (!HasNativeBf16(cpu))
    return {Precision::kFloat32,
            std::string("CPU without bf16 instructions (no avx512_bf16/amx_bf16") +
                (cpu.isa_cap.empty() ? "" : std::string(" under ") + kMaxCpuIsaVariable + "=" + cpu.isa_cap) +
                "): bf16 arithmetic would be emulated"};
  if (stored == Precision::kBFloat16)
    return {Precision::kBFloat16, "CPU with bf16 instructions (avx512_bf16/amx_bf16) and bf16 weights"};
  return {Precision::kFloat32, std::string("CPU, weights stored as ") + PrecisionName(stored) +
                                   ": fp32 (no fp16 arithmetic; fp32 weights are not narrowed)"};
}

}  // namespace unmask::model
