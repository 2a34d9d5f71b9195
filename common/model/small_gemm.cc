#include "common/model/small_gemm.h"

#include <ATen/Parallel.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>

namespace unmask::model {

namespace {

std::atomic<bool> g_enabled{true};

#define UNMASK_AVX512 __attribute__((target("avx512f,fma")))

constexpr int kRowsX = 6;  // x-rows per tile
constexpr int kRowsW = 4;  // W-rows per tile: 6 x 4 accumulators + 4 W vectors + 1 x vector

// y[m][n] for MT rows of x and NT rows of w. Every element is the 16-lane sum, over k in steps
// of 16, of x * w, reduced once at the end: the order depends on neither MT nor NT.
// The sum of the 16 lanes, in a fixed order. (The all-lanes masked forms: GCC 12's unmasked
// ones pass an "undefined" source that -Wuninitialized reports.)
UNMASK_AVX512 inline float LaneSum(__m512 v) {
  constexpr __mmask16 kAll = 0xFFFF;
  v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, kAll, v, v, 0x4E));  // + the other 256-bit half
  v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, kAll, v, v, 0xB1));  // + the neighbouring 128-bit lane
  v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, kAll, v, 0x4E));        // + the other pair in the lane
  v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, kAll, v, 0xB1));        // + the neighbour
  return _mm512_cvtss_f32(v);
}

template <int MT, int NT>
UNMASK_AVX512 inline void Tile(const float* x, std::int64_t K, const float* w, float* y, std::int64_t ldy) {
  __m512 acc[MT][NT];
#pragma GCC unroll 8
  for (int m = 0; m < MT; ++m)
#pragma GCC unroll 4
    for (int n = 0; n < NT; ++n) acc[m][n] = _mm512_setzero_ps();
  std::int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    __m512 wv[NT];
#pragma GCC unroll 4
    for (int n = 0; n < NT; ++n) wv[n] = _mm512_loadu_ps(w + n * K + k);
#pragma GCC unroll 8
    for (int m = 0; m < MT; ++m) {
      const __m512 xv = _mm512_loadu_ps(x + m * K + k);
#pragma GCC unroll 4
      for (int n = 0; n < NT; ++n) acc[m][n] = _mm512_fmadd_ps(xv, wv[n], acc[m][n]);
    }
  }
  if (k < K) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (K - k)) - 1);
    __m512 wv[NT];
#pragma GCC unroll 4
    for (int n = 0; n < NT; ++n) wv[n] = _mm512_maskz_loadu_ps(mask, w + n * K + k);
#pragma GCC unroll 8
    for (int m = 0; m < MT; ++m) {
      const __m512 xv = _mm512_maskz_loadu_ps(mask, x + m * K + k);
#pragma GCC unroll 4
      for (int n = 0; n < NT; ++n) acc[m][n] = _mm512_fmadd_ps(xv, wv[n], acc[m][n]);
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < MT; ++m)
#pragma GCC unroll 4
    for (int n = 0; n < NT; ++n) y[m * ldy + n] = LaneSum(acc[m][n]);
}

// All rows of x against NT rows of w.
template <int NT>
UNMASK_AVX512 void AllRowsOfX(const float* x, std::int64_t M, std::int64_t K, const float* w, float* y,
                              std::int64_t ldy) {
  std::int64_t m = 0;
  for (; m + kRowsX <= M; m += kRowsX) Tile<kRowsX, NT>(x + m * K, K, w, y + m * ldy, ldy);
  const float* xr = x + m * K;
  float* yr = y + m * ldy;
  switch (M - m) {
    case 5: Tile<5, NT>(xr, K, w, yr, ldy); break;
    case 4: Tile<4, NT>(xr, K, w, yr, ldy); break;
    case 3: Tile<3, NT>(xr, K, w, yr, ldy); break;
    case 2: Tile<2, NT>(xr, K, w, yr, ldy); break;
    case 1: Tile<1, NT>(xr, K, w, yr, ldy); break;
    default: break;
  }
}

// W-rows [begin, end).
UNMASK_AVX512 void WRows(const float* x, std::int64_t M, std::int64_t K, const float* w, std::int64_t begin,
                         std::int64_t end, float* y, std::int64_t ldy) {
  std::int64_t n = begin;
  for (; n + kRowsW <= end; n += kRowsW) AllRowsOfX<kRowsW>(x, M, K, w + n * K, y + n, ldy);
  for (; n < end; ++n) AllRowsOfX<1>(x, M, K, w + n * K, y + n, ldy);
}

}  // namespace

bool SmallGemmSupported() {
  static const bool supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  return supported;
}

bool SmallGemmEnabled() { return g_enabled.load(std::memory_order_relaxed) && SmallGemmSupported(); }

void SetSmallGemmEnabled(bool enabled) { g_enabled.store(enabled, std::memory_order_relaxed); }

void SmallGemmF32(const float* x, std::int64_t M, std::int64_t K, const float* w, std::int64_t N, float* y,
                  std::int64_t ldy) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    for (std::int64_t m = 0; m < M; ++m) std::fill(y + m * ldy, y + m * ldy + N, 0.0f);
    return;
  }
  // Tiles of kRowsW W-rows; a chunk is at least ~256k multiply-adds so that small layers do not
  // pay for a parallel region they cannot use.
  const std::int64_t tiles = (N + kRowsW - 1) / kRowsW;
  const std::int64_t grain = std::max<std::int64_t>(1, (std::int64_t{1} << 18) / (M * K * kRowsW));
  at::parallel_for(0, tiles, grain, [&](std::int64_t begin, std::int64_t end) {
    WRows(x, M, K, w, begin * kRowsW, std::min(N, end * kRowsW), y, ldy);
  });
}

}  // namespace unmask::model
