// The AVX-512 tiles of small_gemm.h: 6 x-rows by 4 W-rows in 24 zmm accumulators (+ 4 W vectors
// + 1 x vector of the 32 registers), 16 lanes of k per step. Compiled for AVX-512F through target
// attributes only; small_gemm.cc calls in here only where the CPU has it.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "common/model/small_gemm_tiles.h"

namespace unmask::model::small_gemm_internal {

namespace {

#define UNMASK_AVX512 __attribute__((target("avx512f,fma")))

constexpr int kRowsX = 6;  // x-rows per tile
constexpr int kRowsW = 4;  // W-rows per tile

// W's 16 values at p as float32: stored so, or bf16 bits widened (zero-extend, shift left 16).
UNMASK_AVX512 inline __m512 LoadW(const float* p) { return _mm512_loadu_ps(p); }
// (The all-lanes masked forms here and in LaneSum: GCC 12's unmasked ones pass an "undefined"
// source that -Wmaybe-uninitialized reports.)
constexpr __mmask16 kAll = 0xFFFF;
UNMASK_AVX512 inline __m512 LoadW(const std::uint16_t* p) {
  const __m512i wide = _mm512_maskz_cvtepu16_epi32(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, wide, 16));
}
// The first r < 16 values, zeros after them. (AVX-512F has no 16-bit masked load, so the bf16
// tail goes through a zeroed copy; it runs once per row and tile.)
UNMASK_AVX512 inline __m512 LoadWTail(const float* p, int /*r*/, __mmask16 mask) {
  return _mm512_maskz_loadu_ps(mask, p);
}
UNMASK_AVX512 inline __m512 LoadWTail(const std::uint16_t* p, int r, __mmask16 /*mask*/) {
  alignas(32) std::uint16_t part[16] = {};
  std::memcpy(part, p, sizeof(std::uint16_t) * r);
  return LoadW(part);
}

// The sum of the 16 lanes, in a fixed order.
UNMASK_AVX512 inline float LaneSum(__m512 v) {
  v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, kAll, v, v, 0x4E));  // + the other 256-bit half
  v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, kAll, v, v, 0xB1));  // + the neighbouring 128-bit lane
  v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, kAll, v, 0x4E));        // + the other pair in the lane
  v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, kAll, v, 0xB1));        // + the neighbour
  return _mm512_cvtss_f32(v);
}

// y[m][n] for MT rows of x and NT rows of w. Every element is the 16-lane sum, over k in steps
// of 16, of x * w, reduced once at the end: the order depends on neither MT nor NT.
template <int MT, int NT, typename W>
UNMASK_AVX512 inline void Tile(const float* x, std::int64_t K, const W* w, float* y, std::int64_t ldy) {
  __m512 acc[MT][NT];
#pragma GCC unroll 8
  for (int m = 0; m < MT; ++m)
#pragma GCC unroll 4
    for (int n = 0; n < NT; ++n) acc[m][n] = _mm512_setzero_ps();
  std::int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    __m512 wv[NT];
#pragma GCC unroll 4
    for (int n = 0; n < NT; ++n) wv[n] = LoadW(w + n * K + k);
#pragma GCC unroll 8
    for (int m = 0; m < MT; ++m) {
      const __m512 xv = _mm512_loadu_ps(x + m * K + k);
#pragma GCC unroll 4
      for (int n = 0; n < NT; ++n) acc[m][n] = _mm512_fmadd_ps(xv, wv[n], acc[m][n]);
    }
  }
  if (k < K) {
    const int r = static_cast<int>(K - k);
    const __mmask16 mask = static_cast<__mmask16>((1u << r) - 1);
    __m512 wv[NT];
#pragma GCC unroll 4
    for (int n = 0; n < NT; ++n) wv[n] = LoadWTail(w + n * K + k, r, mask);
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
template <int NT, typename W>
UNMASK_AVX512 void AllRowsOfX(const float* x, std::int64_t M, std::int64_t K, const W* w, float* y,
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

template <typename W>
UNMASK_AVX512 void WRows(const float* x, std::int64_t M, std::int64_t K, const W* w, std::int64_t begin,
                         std::int64_t end, float* y, std::int64_t ldy) {
  std::int64_t n = begin;
  for (; n + kRowsW <= end; n += kRowsW) AllRowsOfX<kRowsW>(x, M, K, w + n * K, y + n, ldy);
  for (; n < end; ++n) AllRowsOfX<1>(x, M, K, w + n * K, y + n, ldy);
}

// bf16 x and bf16 W (AVX512_BF16's vdpbf16ps): each accumulator lane adds the two exact products
// of a pair of k, 32 values of k per step, so a step costs half the float32 tile's instructions
// and x is read at half the bytes. As in Tile, every element is its accumulator's lanes summed over
// k in one fixed order, whatever MT and NT.
#define UNMASK_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16,fma")))

UNMASK_AVX512_BF16 inline __m512bh LoadPairs(const std::uint16_t* p) {
  return reinterpret_cast<__m512bh>(_mm512_loadu_si512(p));
}
UNMASK_AVX512_BF16 inline __m512bh LoadPairsTail(const std::uint16_t* p, __mmask32 mask) {
  return reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(mask, p));
}

template <int MT, int NT>
UNMASK_AVX512_BF16 inline void TileBf16(const std::uint16_t* x, std::int64_t K, const std::uint16_t* w, float* y,
                                        std::int64_t ldy) {
  __m512 acc[MT][NT];
#pragma GCC unroll 8
  for (int m = 0; m < MT; ++m)
#pragma GCC unroll 4
    for (int n = 0; n < NT; ++n) acc[m][n] = _mm512_setzero_ps();
  std::int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    __m512bh wv[NT];
#pragma GCC unroll 4
    for (int n = 0; n < NT; ++n) wv[n] = LoadPairs(w + n * K + k);
#pragma GCC unroll 8
    for (int m = 0; m < MT; ++m) {
      const __m512bh xv = LoadPairs(x + m * K + k);
#pragma GCC unroll 4
      for (int n = 0; n < NT; ++n) acc[m][n] = _mm512_dpbf16_ps(acc[m][n], xv, wv[n]);
    }
  }
  if (k < K) {
    const __mmask32 mask = static_cast<__mmask32>((std::uint64_t{1} << (K - k)) - 1);
    __m512bh wv[NT];
#pragma GCC unroll 4
    for (int n = 0; n < NT; ++n) wv[n] = LoadPairsTail(w + n * K + k, mask);
#pragma GCC unroll 8
    for (int m = 0; m < MT; ++m) {
      const __m512bh xv = LoadPairsTail(x + m * K + k, mask);
#pragma GCC unroll 4
      for (int n = 0; n < NT; ++n) acc[m][n] = _mm512_dpbf16_ps(acc[m][n], xv, wv[n]);
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < MT; ++m)
#pragma GCC unroll 4
    for (int n = 0; n < NT; ++n) y[m * ldy + n] = LaneSum(acc[m][n]);
}

template <int NT>
UNMASK_AVX512_BF16 void AllRowsOfXBf16(const std::uint16_t* x, std::int64_t M, std::int64_t K, const std::uint16_t* w,
                                       float* y, std::int64_t ldy) {
  std::int64_t m = 0;
  for (; m + kRowsX <= M; m += kRowsX) TileBf16<kRowsX, NT>(x + m * K, K, w, y + m * ldy, ldy);
  const std::uint16_t* xr = x + m * K;
  float* yr = y + m * ldy;
  switch (M - m) {
    case 5: TileBf16<5, NT>(xr, K, w, yr, ldy); break;
    case 4: TileBf16<4, NT>(xr, K, w, yr, ldy); break;
    case 3: TileBf16<3, NT>(xr, K, w, yr, ldy); break;
    case 2: TileBf16<2, NT>(xr, K, w, yr, ldy); break;
    case 1: TileBf16<1, NT>(xr, K, w, yr, ldy); break;
    default: break;
  }
}

}  // namespace

extern const std::int64_t kAvx512RowsW = kRowsW;

void Avx512WRows(const float* x, std::int64_t M, std::int64_t K, const float* w, std::int64_t begin,
                 std::int64_t end, float* y, std::int64_t ldy) {
  WRows(x, M, K, w, begin, end, y, ldy);
}

void Avx512WRows(const float* x, std::int64_t M, std::int64_t K, const std::uint16_t* w, std::int64_t begin,
                 std::int64_t end, float* y, std::int64_t ldy) {
  WRows(x, M, K, w, begin, end, y, ldy);
}

void Avx512Bf16WRows(const std::uint16_t* x, std::int64_t M, std::int64_t K, const std::uint16_t* w,
                     std::int64_t begin, std::int64_t end, float* y, std::int64_t ldy) {
  std::int64_t n = begin;
  for (; n + kRowsW <= end; n += kRowsW) AllRowsOfXBf16<kRowsW>(x, M, K, w + n * K, y + n, ldy);
  for (; n < end; ++n) AllRowsOfXBf16<1>(x, M, K, w + n * K, y + n, ldy);
}

}  // namespace unmask::model::small_gemm_internal
