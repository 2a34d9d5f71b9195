// The AVX-512 tiles of small_gemm.h: 6 x-rows by 4 W-rows in 24 zmm accumulators (+ 4 W vectors
// + 1 x vector of the 32 registers), 16 lanes of k per step. Compiled for AVX-512F through target
// attributes only; small_gemm.cc calls in here only where the CPU has it.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "common/model/bf16_bits.h"
#include "common/model/lane_reduce.h"
#include "common/model/small_gemm_tiles.h"

namespace unmask::model::small_gemm_internal {

namespace {

#define UNMASK_AVX512 __attribute__((target("avx512f,fma")))

constexpr int kRowsX = 6;  // x-rows per tile
constexpr int kRowsW = 4;  // W-rows per tile

// W's 16 values at p as float32: stored so, or bf16 bits widened (zero-extend, shift left 16).
UNMASK_AVX512 inline __m512 LoadW(const float* p) { return _mm512_loadu_ps(p); }
// (The all-lanes masked forms: GCC 12's unmasked ones pass an "undefined" source that
// -Wmaybe-uninitialized reports; see lane_reduce.h.)
using lane_reduce::kAll16;
UNMASK_AVX512 inline __m512 LoadW(const std::uint16_t* p) { return bf16_simd::Widen16(p); }
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

// lane_reduce::Sum16 of 16 accumulators at once, each summed in Sum16's order (the same pairs added at each
// of its four steps, so the same bits), about 45 instructions instead of 16 x 8: at K = 256 the
// one-by-one sums were as many instructions as the products. Sum16(a[i]) is left in lane
// 4 * (i % 4) + i / 4 of the result (InOrder puts it in lane i).
UNMASK_AVX512 inline __m512 LaneSums16Vector(const __m512 (&a)[16]) {
  __m512 s[8], r[4], q[2];
  // Step 1, v[j] + v[j + 8]: s[i] = [a(2i) halves added | a(2i+1) halves added].
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i)
    s[i] = _mm512_add_ps(_mm512_mask_shuffle_f32x4(a[2 * i], kAll16, a[2 * i], a[2 * i + 1], 0x44),
                         _mm512_mask_shuffle_f32x4(a[2 * i], kAll16, a[2 * i], a[2 * i + 1], 0xEE));
  // Step 2, v[j] + v[j + 4]: r[i] = one 128-bit lane per accumulator, a(4i) .. a(4i + 3).
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
    r[i] = _mm512_add_ps(_mm512_mask_shuffle_f32x4(s[2 * i], kAll16, s[2 * i], s[2 * i + 1], 0x88),
                         _mm512_mask_shuffle_f32x4(s[2 * i], kAll16, s[2 * i], s[2 * i + 1], 0xDD));
  // Step 3, v[j] + v[j + 2]; step 4, v[0] + v[1]: lane k of z holds a(k), a(4 + k), a(8 + k), a(12 + k).
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i)
    q[i] = _mm512_add_ps(_mm512_mask_shuffle_ps(r[2 * i], kAll16, r[2 * i], r[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_mask_shuffle_ps(r[2 * i], kAll16, r[2 * i], r[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  return _mm512_add_ps(_mm512_mask_shuffle_ps(q[0], kAll16, q[0], q[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_mask_shuffle_ps(q[0], kAll16, q[0], q[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

// z's lanes put back in accumulator order, then stored as float32, or rounded to bf16 bits as Put
// rounds, 16 at once.
UNMASK_AVX512 inline __m512 InOrder(__m512 z) {
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_maskz_permutexvar_ps(kAll16, order, z);
}
UNMASK_AVX512 inline void StoreLanes(__m512 z, float (&lanes)[16]) { _mm512_storeu_ps(lanes, InOrder(z)); }
UNMASK_AVX512 inline void StoreLanes(__m512 z, std::uint16_t (&lanes)[16]) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), bf16_simd::Round16(InOrder(z)));
}

// A sum stored as float32, or rounded to bf16 bits as c10::BFloat16 rounds (bf16_bits.h): what a
// bf16 linear layer's output holds.
inline void Put(float* y, float v) { *y = v; }
inline void Put(std::uint16_t* y, float v) { *y = RoundBf16(v); }

// y[m * ldy + n] = lane_reduce::Sum16(acc[m][n]), in groups of 16 where there are at least 4.
template <int MT, int NT, typename Y>
UNMASK_AVX512 inline void StoreSums(const __m512 (&acc)[MT][NT], Y* y, std::int64_t ldy) {
  constexpr int kCount = MT * NT;
  if constexpr (kCount < 4) {
#pragma GCC unroll 8
    for (int m = 0; m < MT; ++m)
#pragma GCC unroll 4
      for (int n = 0; n < NT; ++n) Put(y + m * ldy + n, lane_reduce::Sum16(acc[m][n]));
  } else {
#pragma GCC unroll 2
    for (int first = 0; first < kCount; first += 16) {
      __m512 group[16];
      alignas(64) Y lanes[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i)
        group[i] = first + i < kCount ? acc[(first + i) / NT][(first + i) % NT] : _mm512_setzero_ps();
      StoreLanes(LaneSums16Vector(group), lanes);
      if constexpr (NT == 4) {  // a row's four outputs are four neighbouring lanes: one store each
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r)
          if (first + 4 * r < kCount) std::memcpy(y + (first / 4 + r) * ldy, lanes + 4 * r, 4 * sizeof(Y));
      } else {
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i)
          if (first + i < kCount) y[(first + i) / NT * ldy + (first + i) % NT] = lanes[i];
      }
    }
  }
}

// y[m][n] for MT rows of x and NT rows of w. Every element is the 16-lane sum, over k in steps
// of 16, of x * w, reduced once at the end: the order depends on neither MT nor NT. With
// kPrefetch, the next NT rows of w (w + NT * K) are fetched into cache along the way.
template <int MT, int NT, bool kPrefetch = false, typename W>
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
    if constexpr (kPrefetch) {
#pragma GCC unroll 4
      for (int n = 0; n < NT; ++n) PrefetchElement(w, (NT + n) * K + k);
    }
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
  StoreSums<MT, NT>(acc, y, ldy);
}

// Tiles of the last rows < kRowsX of x.
template <int NT, bool kPrefetch, typename W>
UNMASK_AVX512 inline void LastRowsOfX(std::int64_t rows, const float* x, std::int64_t K, const W* w, float* y,
                                      std::int64_t ldy) {
  switch (rows) {
    case 5: Tile<5, NT, kPrefetch>(x, K, w, y, ldy); break;
    case 4: Tile<4, NT, kPrefetch>(x, K, w, y, ldy); break;
    case 3: Tile<3, NT, kPrefetch>(x, K, w, y, ldy); break;
    case 2: Tile<2, NT, kPrefetch>(x, K, w, y, ldy); break;
    case 1: Tile<1, NT, kPrefetch>(x, K, w, y, ldy); break;
    default: break;
  }
}

// All rows of x against NT rows of w. The first x-tile reads these w rows from memory and fetches
// the next NT meanwhile, so that a product of few x-rows (an LM head over a block's masked rows)
// does not wait on memory at every w-tile: 8-10% of reference mode's time at d_model 512 on a
// Zen 4 (docs/benchmarks.md).
template <int NT, typename W>
UNMASK_AVX512 void AllRowsOfX(const float* x, std::int64_t M, std::int64_t K, const W* w, float* y,
                              std::int64_t ldy) {
  if (M < kRowsX) return LastRowsOfX<NT, true>(M, x, K, w, y, ldy);
  Tile<kRowsX, NT, true>(x, K, w, y, ldy);
  std::int64_t m = kRowsX;
  for (; m + kRowsX <= M; m += kRowsX) Tile<kRowsX, NT>(x + m * K, K, w, y + m * ldy, ldy);
  LastRowsOfX<NT, false>(M - m, x + m * K, K, w, y + m * ldy, ldy);
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

template <int MT, int NT, bool kPrefetch = false, typename Y>
UNMASK_AVX512_BF16 inline void TileBf16(const std::uint16_t* x, std::int64_t K, const std::uint16_t* w, Y* y,
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
    if constexpr (kPrefetch) {  // as in Tile
#pragma GCC unroll 4
      for (int n = 0; n < NT; ++n) PrefetchElement(w, (NT + n) * K + k);
    }
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
  StoreSums<MT, NT>(acc, y, ldy);
}

// LastRowsOfX and AllRowsOfX for TileBf16. (Copies rather than one template: a function's target
// attributes cannot follow its template arguments, and the float32 tiles must not need
// AVX512_BF16 or BW.)
template <int NT, bool kPrefetch, typename Y>
UNMASK_AVX512_BF16 inline void LastRowsOfXBf16(std::int64_t rows, const std::uint16_t* x, std::int64_t K,
                                               const std::uint16_t* w, Y* y, std::int64_t ldy) {
  switch (rows) {
    case 5: TileBf16<5, NT, kPrefetch>(x, K, w, y, ldy); break;
    case 4: TileBf16<4, NT, kPrefetch>(x, K, w, y, ldy); break;
    case 3: TileBf16<3, NT, kPrefetch>(x, K, w, y, ldy); break;
    case 2: TileBf16<2, NT, kPrefetch>(x, K, w, y, ldy); break;
    case 1: TileBf16<1, NT, kPrefetch>(x, K, w, y, ldy); break;
    default: break;
  }
}
template <int NT, typename Y>
UNMASK_AVX512_BF16 void AllRowsOfXBf16(const std::uint16_t* x, std::int64_t M, std::int64_t K, const std::uint16_t* w,
                                       Y* y, std::int64_t ldy) {
  if (M < kRowsX) return LastRowsOfXBf16<NT, true>(M, x, K, w, y, ldy);
  TileBf16<kRowsX, NT, true>(x, K, w, y, ldy);
  std::int64_t m = kRowsX;
  for (; m + kRowsX <= M; m += kRowsX) TileBf16<kRowsX, NT>(x + m * K, K, w, y + m * ldy, ldy);
  LastRowsOfXBf16<NT, false>(M - m, x + m * K, K, w, y + m * ldy, ldy);
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

namespace {
template <typename Y>
void Bf16WRows(const std::uint16_t* x, std::int64_t M, std::int64_t K, const std::uint16_t* w, std::int64_t begin,
               std::int64_t end, Y* y, std::int64_t ldy) {
  std::int64_t n = begin;
  for (; n + kRowsW <= end; n += kRowsW) AllRowsOfXBf16<kRowsW>(x, M, K, w + n * K, y + n, ldy);
  for (; n < end; ++n) AllRowsOfXBf16<1>(x, M, K, w + n * K, y + n, ldy);
}
}  // namespace

void Avx512Bf16WRows(const std::uint16_t* x, std::int64_t M, std::int64_t K, const std::uint16_t* w,
                     std::int64_t begin, std::int64_t end, float* y, std::int64_t ldy) {
  Bf16WRows(x, M, K, w, begin, end, y, ldy);
}

void Avx512Bf16WRows(const std::uint16_t* x, std::int64_t M, std::int64_t K, const std::uint16_t* w,
                     std::int64_t begin, std::int64_t end, std::uint16_t* y, std::int64_t ldy) {
  Bf16WRows(x, M, K, w, begin, end, y, ldy);
}

}  // namespace unmask::model::small_gemm_internal
