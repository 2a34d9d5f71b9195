// Horizontal reductions of one AVX-512 vector's 16 float lanes, for the kernels that select
// AVX-512 per function at run time (small_gemm_avx512, greedy_rows, attention_cpu).
//
// Written with masked shuffles rather than GCC's _mm512_reduce_*_ps: those pass an undefined
// vector into their unmasked shuffles, and GCC 12 warns -Wmaybe-uninitialized inside its own
// header at every use. The order of the steps is fixed, so a sum is the same on every call (and
// the same as GCC's _mm512_reduce_add_ps, whose adds pair the lanes the same way).
#pragma once

#include <immintrin.h>

namespace unmask::model::lane_reduce {

// Every lane of a 16-lane mask: the masked forms here and in bf16_bits.h take it where GCC's
// unmasked forms would pass an "undefined" source.
inline constexpr __mmask16 kAll16 = 0xFFFF;

// The sum of the 16 lanes: halves, then 128-bit lanes, then pairs, then neighbours.
__attribute__((target("avx512f"))) inline float Sum16(__m512 v) {
  v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, kAll16, v, v, 0x4E));  // + the other 256-bit half
  v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, kAll16, v, v, 0xB1));  // + the neighbouring 128-bit lane
  v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, kAll16, v, 0x4E));        // + the other pair in the lane
  v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, kAll16, v, 0xB1));        // + the neighbour
  return _mm512_cvtss_f32(v);
}

// Lane by lane, the larger of a and b (_mm512_max_ps, whose unmasked form warns the same way).
__attribute__((target("avx512f"))) inline __m512 Max(__m512 a, __m512 b) { return _mm512_maskz_max_ps(kAll16, a, b); }

// The largest of the 16 lanes, in the same steps (no lane may be NaN).
__attribute__((target("avx512f"))) inline float Max16(__m512 v) {
  v = Max(v, _mm512_mask_shuffle_f32x4(v, kAll16, v, v, 0x4E));
  v = Max(v, _mm512_mask_shuffle_f32x4(v, kAll16, v, v, 0xB1));
  v = Max(v, _mm512_mask_permute_ps(v, kAll16, v, 0x4E));
  v = Max(v, _mm512_mask_permute_ps(v, kAll16, v, 0xB1));
  return _mm512_cvtss_f32(v);
}

// Lanes 0-7 (half 0) or 8-15 (half 1) of v (_mm512_castps512_ps256 and _mm512_extractf32x8_ps
// warn the same way, and the latter needs AVX512DQ).
template <int kHalf>
__attribute__((target("avx512f"))) inline __m256 Half(__m512 v) {
  return _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(v), kHalf));
}

}  // namespace unmask::model::lane_reduce
