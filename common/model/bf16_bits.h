// bf16 as c10::BFloat16's scalar arithmetic has it: widening is exact (the 16 bits moved to the
// top of a float32), rounding is to nearest even, NaN becomes 0x7FC0. One value at a time here;
// 16 or 8 lanes at a time in the AVX-512F and AVX2 forms below, compiled through target attributes
// (include them only in files whose callers check the CPU first).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "common/model/lane_reduce.h"

namespace unmask::model {

inline float WidenBf16(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline std::uint16_t RoundBf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const auto rounded = static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  return f != f ? std::uint16_t{0x7FC0} : rounded;
}

namespace bf16_simd {

// (The all-lanes masked forms: GCC 12's unmasked ones pass an "undefined" source that
// -Wmaybe-uninitialized reports.)
using lane_reduce::kAll16;

// 16 lanes of bf16 at p, widened.
__attribute__((target("avx512f"))) inline __m512 Widen16(const std::uint16_t* p) {
  const __m512i wide = _mm512_maskz_cvtepu16_epi32(kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll16, wide, 16));
}

// f rounded: the bf16 bits in the low 16 of each 32-bit lane.
__attribute__((target("avx512f"))) inline __m512i RoundBits16(__m512 f) {
  const __m512i u = _mm512_castps_si512(f);
  const __m512i lsb = _mm512_and_si512(_mm512_maskz_srli_epi32(kAll16, u, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_maskz_srli_epi32(kAll16, _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb), 16);
  return _mm512_mask_mov_epi32(rounded, _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q), _mm512_set1_epi32(0x7FC0));
}

// f rounded, the 16 bf16 values as 32 bytes.
__attribute__((target("avx512f"))) inline __m256i Round16(__m512 f) {
  return _mm512_maskz_cvtepi32_epi16(kAll16, RoundBits16(f));
}

// 8 lanes of bf16 at p, widened.
__attribute__((target("avx2"))) inline __m256 Widen8(const std::uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

__attribute__((target("avx2"))) inline __m256i RoundBits8(__m256 f) {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(rounded, _mm256_set1_epi32(0x7FC0), nan);
}

// f rounded, the 8 bf16 values as 16 bytes (each lane at most 0xFFFF, so the unsigned saturating
// pack is exact).
__attribute__((target("avx2"))) inline __m128i Round8(__m256 f) {
  const __m256i bits = RoundBits8(f);
  return _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
}

}  // namespace bf16_simd
}  // namespace unmask::model
