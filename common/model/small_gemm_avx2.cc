// The AVX2 tiles of small_gemm.h: 4 x-rows by 3 W-rows in 12 ymm accumulators (+ 3 W vectors
// + 1 x vector: the 16 registers), 8 lanes of k per step. Compiled for AVX2 + FMA through target
// attributes only; small_gemm.cc calls in here only where the CPU has them.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "common/model/small_gemm_tiles.h"

namespace unmask::model::small_gemm_internal {

namespace {

#define UNMASK_AVX2 __attribute__((target("avx2,fma")))

constexpr int kRowsX = 4;  // x-rows per tile
constexpr int kRowsW = 3;  // W-rows per tile

// kMaskBits + 8 - r: the all-ones lanes of the first r, for the masked loads of a K tail.
alignas(64) constexpr std::int32_t kMaskBits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

// W's 8 values at p as float32: stored so, or bf16 bits widened (zero-extend, shift left 16).
UNMASK_AVX2 inline __m256 LoadW(const float* p) { return _mm256_loadu_ps(p); }
UNMASK_AVX2 inline __m256 LoadW(const std::uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}
// The first r < 8 values, zeros after them. (No 16-bit masked load: the bf16 tail goes through a
// zeroed copy; it runs once per row and tile.)
UNMASK_AVX2 inline __m256 LoadWTail(const float* p, int /*r*/, __m256i mask) { return _mm256_maskload_ps(p, mask); }
UNMASK_AVX2 inline __m256 LoadWTail(const std::uint16_t* p, int r, __m256i /*mask*/) {
  alignas(16) std::uint16_t part[8] = {};
  std::memcpy(part, p, sizeof(std::uint16_t) * r);
  return LoadW(part);
}

// The sum of the 8 lanes, in a fixed order.
UNMASK_AVX2 inline float LaneSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));  // + the other 128-bit half
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));                                          // + the other pair
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 0x1));                                    // + the neighbour
  return _mm_cvtss_f32(s);
}

// y[m][n] for MT rows of x and NT rows of w. Every element is the 8-lane sum, over k in steps of
// 8, of x * w, reduced once at the end: the order depends on neither MT nor NT. With kPrefetch,
// the next NT rows of w are fetched into cache along the way (as the AVX-512 tiles do).
template <int MT, int NT, bool kPrefetch = false, typename W>
UNMASK_AVX2 inline void Tile(const float* x, std::int64_t K, const W* w, float* y, std::int64_t ldy) {
  __m256 acc[MT][NT];
#pragma GCC unroll 4
  for (int m = 0; m < MT; ++m)
#pragma GCC unroll 3
    for (int n = 0; n < NT; ++n) acc[m][n] = _mm256_setzero_ps();
  std::int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 wv[NT];
#pragma GCC unroll 3
    for (int n = 0; n < NT; ++n) wv[n] = LoadW(w + n * K + k);
    if constexpr (kPrefetch) {
#pragma GCC unroll 3
      for (int n = 0; n < NT; ++n) PrefetchElement(w, (NT + n) * K + k);
    }
#pragma GCC unroll 4
    for (int m = 0; m < MT; ++m) {
      const __m256 xv = _mm256_loadu_ps(x + m * K + k);
#pragma GCC unroll 3
      for (int n = 0; n < NT; ++n) acc[m][n] = _mm256_fmadd_ps(xv, wv[n], acc[m][n]);
    }
  }
  if (k < K) {
    const int r = static_cast<int>(K - k);
    const __m256i mask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskBits + 8 - r));
    __m256 wv[NT];
#pragma GCC unroll 3
    for (int n = 0; n < NT; ++n) wv[n] = LoadWTail(w + n * K + k, r, mask);
#pragma GCC unroll 4
    for (int m = 0; m < MT; ++m) {
      const __m256 xv = _mm256_maskload_ps(x + m * K + k, mask);
#pragma GCC unroll 3
      for (int n = 0; n < NT; ++n) acc[m][n] = _mm256_fmadd_ps(xv, wv[n], acc[m][n]);
    }
  }
#pragma GCC unroll 4
  for (int m = 0; m < MT; ++m)
#pragma GCC unroll 3
    for (int n = 0; n < NT; ++n) y[m * ldy + n] = LaneSum(acc[m][n]);
}

// Tiles of the last rows < kRowsX of x.
template <int NT, bool kPrefetch, typename W>
UNMASK_AVX2 inline void LastRowsOfX(std::int64_t rows, const float* x, std::int64_t K, const W* w, float* y,
                                    std::int64_t ldy) {
  switch (rows) {
    case 3: Tile<3, NT, kPrefetch>(x, K, w, y, ldy); break;
    case 2: Tile<2, NT, kPrefetch>(x, K, w, y, ldy); break;
    case 1: Tile<1, NT, kPrefetch>(x, K, w, y, ldy); break;
    default: break;
  }
}

// All rows of x against NT rows of w; the first x-tile fetches the next w rows (see
// small_gemm_avx512.cc's AllRowsOfX).
template <int NT, typename W>
UNMASK_AVX2 void AllRowsOfX(const float* x, std::int64_t M, std::int64_t K, const W* w, float* y, std::int64_t ldy) {
  if (M < kRowsX) return LastRowsOfX<NT, true>(M, x, K, w, y, ldy);
  Tile<kRowsX, NT, true>(x, K, w, y, ldy);
  std::int64_t m = kRowsX;
  for (; m + kRowsX <= M; m += kRowsX) Tile<kRowsX, NT>(x + m * K, K, w, y + m * ldy, ldy);
  LastRowsOfX<NT, false>(M - m, x + m * K, K, w, y + m * ldy, ldy);
}

template <typename W>
UNMASK_AVX2 void WRows(const float* x, std::int64_t M, std::int64_t K, const W* w, std::int64_t begin,
                       std::int64_t end, float* y, std::int64_t ldy) {
  std::int64_t n = begin;
  for (; n + kRowsW <= end; n += kRowsW) AllRowsOfX<kRowsW>(x, M, K, w + n * K, y + n, ldy);
  for (; n < end; ++n) AllRowsOfX<1>(x, M, K, w + n * K, y + n, ldy);
}

}  // namespace

extern const std::int64_t kAvx2RowsW = kRowsW;

void Avx2WRows(const float* x, std::int64_t M, std::int64_t K, const float* w, std::int64_t begin,
               std::int64_t end, float* y, std::int64_t ldy) {
  WRows(x, M, K, w, begin, end, y, ldy);
}

void Avx2WRows(const float* x, std::int64_t M, std::int64_t K, const std::uint16_t* w, std::int64_t begin,
               std::int64_t end, float* y, std::int64_t ldy) {
  WRows(x, M, K, w, begin, end, y, ldy);
}

}  // namespace unmask::model::small_gemm_internal
