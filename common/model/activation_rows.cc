// activation_rows.h: AVX-512F and AVX2 forms compiled through target attributes only (this file
// runs on any x86-64; a form is called only where the CPU has it).
#include "common/model/activation_rows.h"

#include <algorithm>
#include <cstdint>

#include "common/model/bf16_bits.h"
#include "common/model/sleef_forms.h"

namespace unmask::model {
namespace {

#ifdef UNMASK_HAVE_SLEEF
// ---- AVX-512F, 16 lanes ------------------------------------------------------------------------
#define UNMASK_AVX512 __attribute__((target("avx512f")))

// -x as ATen's vectors negate: the sign bit flipped (_mm512_xor_ps would need AVX512DQ).
UNMASK_AVX512 inline __m512 Negate16(__m512 x) {
  return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)));
}

UNMASK_AVX512 inline __m512 Silu16(__m512 x) {
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), Sleef_expf16_u10avx512f(Negate16(x))));
}

// f rounded to bf16 and widened again.
UNMASK_AVX512 inline __m512 RoundTrip16(__m512 f) {
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(lane_reduce::kAll16, bf16_simd::RoundBits16(f), 16));
}

// 16 bf16 elements: silu as ATen 1.13 computes it on bf16 (exp(-x), 1 + that, and x over that,
// each rounded to bf16), times up, rounded.
UNMASK_AVX512 inline void SiluMulBf16x16(const std::uint16_t* gate, const std::uint16_t* up, std::uint16_t* out) {
  const __m512 x = bf16_simd::Widen16(gate);
  const __m512 exp_bf16 = RoundTrip16(Sleef_expf16_u10avx512f(Negate16(x)));
  const __m512 denominator = RoundTrip16(_mm512_add_ps(_mm512_set1_ps(1.0f), exp_bf16));
  const __m512 product = _mm512_mul_ps(RoundTrip16(_mm512_div_ps(x, denominator)), bf16_simd::Widen16(up));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), bf16_simd::Round16(product));
}

UNMASK_AVX512 inline void SiluMulF32x16(const float* gate, const float* up, float* out) {
  _mm512_storeu_ps(out, _mm512_mul_ps(Silu16(_mm512_loadu_ps(gate)), _mm512_loadu_ps(up)));
}

// ---- AVX2, 8 lanes -----------------------------------------------------------------------------
#define UNMASK_AVX2 __attribute__((target("avx2,fma")))

UNMASK_AVX2 inline __m256 Silu8(__m256 x) {
  const __m256 e = Sleef_expf8_u10avx2(_mm256_xor_ps(x, _mm256_set1_ps(-0.0f)));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

UNMASK_AVX2 inline __m256 RoundTrip8(__m256 f) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(bf16_simd::RoundBits8(f), 16));
}

UNMASK_AVX2 inline void SiluMulBf16x8(const std::uint16_t* gate, const std::uint16_t* up, std::uint16_t* out) {
  const __m256 x = bf16_simd::Widen8(gate);
  const __m256 exp_bf16 = RoundTrip8(Sleef_expf8_u10avx2(_mm256_xor_ps(x, _mm256_set1_ps(-0.0f))));
  const __m256 denominator = RoundTrip8(_mm256_add_ps(_mm256_set1_ps(1.0f), exp_bf16));
  const __m256 product = _mm256_mul_ps(RoundTrip8(_mm256_div_ps(x, denominator)), bf16_simd::Widen8(up));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), bf16_simd::Round8(product));
}

UNMASK_AVX2 inline void SiluMulF32x8(const float* gate, const float* up, float* out) {
  _mm256_storeu_ps(out, _mm256_mul_ps(Silu8(_mm256_loadu_ps(gate)), _mm256_loadu_ps(up)));
}

// Runs `step` (one vector of `lanes` elements) over [0, n): whole vectors in place, the rest
// through zero-padded copies, so that every element goes through the same vector code.
template <int lanes, typename T, typename Step>
inline void OverVectors(const T* gate, const T* up, std::int64_t n, T* out, Step step) {
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) step(gate + i, up + i, out + i);
  if (i == n) return;
  T g[lanes] = {}, u[lanes] = {}, o[lanes];
  std::copy(gate + i, gate + n, g);
  std::copy(up + i, up + n, u);
  step(g, u, o);
  std::copy(o, o + (n - i), out + i);
}

UNMASK_AVX512 void SiluMulBf16Avx512(const std::uint16_t* g, const std::uint16_t* u, std::int64_t n, std::uint16_t* o) {
  OverVectors<16>(g, u, n, o, [](const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* c) UNMASK_AVX512 {
    SiluMulBf16x16(a, b, c);
  });
}
UNMASK_AVX512 void SiluMulF32Avx512(const float* g, const float* u, std::int64_t n, float* o) {
  OverVectors<16>(g, u, n, o, [](const float* a, const float* b, float* c) UNMASK_AVX512 { SiluMulF32x16(a, b, c); });
}
UNMASK_AVX2 void SiluMulBf16Avx2(const std::uint16_t* g, const std::uint16_t* u, std::int64_t n, std::uint16_t* o) {
  OverVectors<8>(g, u, n, o, [](const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* c) UNMASK_AVX2 {
    SiluMulBf16x8(a, b, c);
  });
}
UNMASK_AVX2 void SiluMulF32Avx2(const float* g, const float* u, std::int64_t n, float* o) {
  OverVectors<8>(g, u, n, o, [](const float* a, const float* b, float* c) UNMASK_AVX2 { SiluMulF32x8(a, b, c); });
}
#endif  // UNMASK_HAVE_SLEEF

}  // namespace

SleefForm SleefFormFor(GemmPath path) {
#ifdef UNMASK_HAVE_SLEEF
  const CpuFeatures& cpu = HostCpuFeatures();
  if (path == GemmPath::kAvx512 && cpu.avx512f) return SleefForm::kAvx512;
  if (path != GemmPath::kBlas && cpu.avx2 && cpu.fma) return SleefForm::kAvx2;
#else
  (void)path;
#endif
  return SleefForm::kNone;
}

bool SiluMulRuns(GemmPath path) { return SleefFormFor(path) != SleefForm::kNone; }

bool ActivationLoopsBuilt() {
#ifdef UNMASK_HAVE_SLEEF
  return true;
#else
  return false;
#endif
}

bool SiluMulBf16(GemmPath path, const std::uint16_t* gate, const std::uint16_t* up, std::int64_t n,
                 std::uint16_t* out) {
  switch (SleefFormFor(path)) {
#ifdef UNMASK_HAVE_SLEEF
    case SleefForm::kAvx512: SiluMulBf16Avx512(gate, up, n, out); return true;
    case SleefForm::kAvx2: SiluMulBf16Avx2(gate, up, n, out); return true;
#endif
    default: return false;
  }
}

bool SiluMulF32(GemmPath path, const float* gate, const float* up, std::int64_t n, float* out) {
  switch (SleefFormFor(path)) {
#ifdef UNMASK_HAVE_SLEEF
    case SleefForm::kAvx512: SiluMulF32Avx512(gate, up, n, out); return true;
    case SleefForm::kAvx2: SiluMulF32Avx2(gate, up, n, out); return true;
#endif
    default: return false;
  }
}

}  // namespace unmask::model
