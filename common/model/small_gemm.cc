// The active path, and the split of W-rows across threads; the tiles are in
// small_gemm_avx512.cc and small_gemm_avx2.cc (compiled for their instruction sets through target
// attributes only, so this file and its callers run on any x86-64).
#include "common/model/small_gemm.h"

#include "common/model/small_gemm_tiles.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace unmask::model {


namespace {

namespace internal = small_gemm_internal;

std::atomic<GemmPath>& Active() {
  static std::atomic<GemmPath> active{BestGemmPath(HostCpuFeatures())};
  return active;
}

// The flags the kernel of `path` is compiled for (its target attribute) that `cpu` lacks.
std::string MissingFlags(GemmPath path, const CpuFeatures& cpu) {
  std::string missing;
  auto need = [&](bool has, const char* flag) {
    if (!has) missing += std::string(missing.empty() ? "" : " ") + flag;
  };
  if (path == GemmPath::kAvx512) need(cpu.avx512f, "avx512f");
  if (path == GemmPath::kAvx2) need(cpu.avx2, "avx2");
  if (path != GemmPath::kBlas) need(cpu.fma, "fma");
  return missing;
}

bool RunsBf16Pairs(GemmPath path) {
  const CpuFeatures& cpu = HostCpuFeatures();
  return path == GemmPath::kAvx512 && cpu.avx512f && cpu.avx512bw && cpu.avx512_bf16 && cpu.fma;
}

// x float32 (W float32 or bf16), or x and W both bf16 (only where RunsBf16Pairs(path)).
// y float32, or bf16 bits (x and W bf16 only).
template <typename X, typename W, typename Y>
void Run(GemmPath path, const X* x, std::int64_t M, std::int64_t K, const W* w, std::int64_t N, Y* y,
         std::int64_t ldy) {
  if (path == GemmPath::kBlas || !GemmPathRuns(path, HostCpuFeatures()))
    throw std::invalid_argument(std::string("small gemm: this CPU cannot run the ") + GemmPathName(path) +
                                " kernel");
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    for (std::int64_t m = 0; m < M; ++m) std::fill(y + m * ldy, y + m * ldy + N, Y{0});  // bf16 0 is 0x0000
    return;
  }
  const bool avx512 = path == GemmPath::kAvx512;
  const std::int64_t rows_w = avx512 ? internal::kAvx512RowsW : internal::kAvx2RowsW;
  // Tiles of rows_w W-rows; a chunk is at least ~256k multiply-adds so that small layers do not
  // pay for a parallel region they cannot use.
  const std::int64_t tiles = (N + rows_w - 1) / rows_w;
  const std::int64_t grain = std::max<std::int64_t>(1, (std::int64_t{1} << 18) / (M * K * rows_w));
  at::parallel_for(0, tiles, grain, [&](std::int64_t begin, std::int64_t end) {
    const std::int64_t n0 = begin * rows_w, n1 = std::min(N, end * rows_w);
    if constexpr (std::is_same_v<X, std::uint16_t>) {
      internal::Avx512Bf16WRows(x, M, K, w, n0, n1, y, ldy);
    } else if constexpr (!std::is_same_v<Y, float>) {
      static_assert(std::is_same_v<Y, float>, "bf16 output needs bf16 x");
    } else if (avx512) {
      internal::Avx512WRows(x, M, K, w, n0, n1, y, ldy);
    } else {
      internal::Avx2WRows(x, M, K, w, n0, n1, y, ldy);
    }
  });
}

}  // namespace

GemmPath ActiveGemmPath() { return Active().load(std::memory_order_relaxed); }

Status SetGemmPath(GemmPath path) {
  const CpuFeatures& cpu = HostCpuFeatures();
  if (!GemmPathRuns(path, cpu)) {
    std::string missing = MissingFlags(path, cpu);
    if (missing.empty()) missing = "a flag it needs";
    return InvalidArgumentError(std::string("gemm path ") + GemmPathName(path) + ": this CPU lacks " + missing +
                                " (it has: " + DescribeCpuFlags(cpu) + ")");
  }
  Active().store(path, std::memory_order_relaxed);
  return OkStatus();
}

void SmallGemmF32(GemmPath path, const float* x, std::int64_t M, std::int64_t K, const float* w, std::int64_t N,
                  float* y, std::int64_t ldy) {
  Run(path, x, M, K, w, N, y, ldy);
}

void SmallGemmBf16W(GemmPath path, const float* x, std::int64_t M, std::int64_t K, const std::uint16_t* w,
                    std::int64_t N, float* y, std::int64_t ldy) {
  Run(path, x, M, K, w, N, y, ldy);
}

bool SmallGemmBf16Native(GemmPath path) { return RunsBf16Pairs(path); }

void SmallGemmBf16(GemmPath path, const std::uint16_t* x, std::int64_t M, std::int64_t K, const std::uint16_t* w,
                   std::int64_t N, float* y, std::int64_t ldy) {
  if (RunsBf16Pairs(path)) {
    Run(path, x, M, K, w, N, y, ldy);
    return;
  }
  // x widened (exact) into a buffer of this thread's, then W read as bf16 as SmallGemmBf16W does.
  thread_local std::vector<float> wide;
  wide.resize(static_cast<std::size_t>(std::max<std::int64_t>(0, M * K)));
  for (std::int64_t i = 0; i < M * K; ++i) {
    const std::uint32_t bits = static_cast<std::uint32_t>(x[i]) << 16;
    std::memcpy(&wide[static_cast<std::size_t>(i)], &bits, sizeof bits);
  }
  Run(path, wide.data(), M, K, w, N, y, ldy);
}

void SmallGemmBf16Rounded(GemmPath path, const std::uint16_t* x, std::int64_t M, std::int64_t K,
                          const std::uint16_t* w, std::int64_t N, std::uint16_t* y, std::int64_t ldy) {
  if (!RunsBf16Pairs(path))
    throw std::invalid_argument(std::string("small gemm: bf16 sums rounded as stored need AVX512_BF16 on the ") +
                                GemmPathName(path) + " path");
  Run(path, x, M, K, w, N, y, ldy);
}

}  // namespace unmask::model
