// bf16_rows.h's loops: plain C++, and AVX-512F and AVX2 forms compiled through target attributes
// only (this file runs on any x86-64; the wide forms are called only where the CPU has them).
#include "common/model/bf16_rows.h"

#include "common/model/bf16_bits.h"

namespace unmask::model {
namespace {

// ---- Plain C++: the definition every path matches ------------------------------------------
// (Not inlined into the wide forms' tails: there, with FMA in the target, the compiler could fuse
// a product and a sum that must stay two roundings.)

__attribute__((noinline)) void RoundPlain(const float* in, std::int64_t n, std::uint16_t* out) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = RoundBf16(in[i]);
}

__attribute__((noinline)) void AddScaledPlain(std::uint16_t* y, const std::uint16_t* o, float w, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float product = WidenBf16(RoundBf16(WidenBf16(o[i]) * w));
    y[i] = RoundBf16(WidenBf16(y[i]) + product);
  }
}

__attribute__((noinline)) void AccumulatePlain(float* acc, const std::uint16_t* o, float w, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float product = WidenBf16(o[i]) * w;
    acc[i] = acc[i] + product;
  }
}

// ---- AVX-512F, 16 lanes ------------------------------------------------------------------------
#define UNMASK_AVX512 __attribute__((target("avx512f")))
constexpr __mmask16 kAll = bf16_simd::kAll16;

UNMASK_AVX512 inline void Store16(std::uint16_t* p, __m512 f) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bf16_simd::Round16(f));
}

// f rounded to bf16 and widened again: the rounded bits moved back to the top half.
UNMASK_AVX512 inline __m512 RoundTrip16(__m512 f) {
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, bf16_simd::RoundBits16(f), 16));
}

UNMASK_AVX512 void Round512(const float* in, std::int64_t n, std::uint16_t* out) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) Store16(out + i, _mm512_loadu_ps(in + i));
  RoundPlain(in + i, n - i, out + i);
}

UNMASK_AVX512 void AddScaled512(std::uint16_t* y, const std::uint16_t* o, float w, std::int64_t n) {
  const __m512 wv = _mm512_set1_ps(w);
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 product = RoundTrip16(_mm512_mul_ps(bf16_simd::Widen16(o + i), wv));
    Store16(y + i, _mm512_add_ps(bf16_simd::Widen16(y + i), product));
  }
  AddScaledPlain(y + i, o + i, w, n - i);
}

UNMASK_AVX512 void Accumulate512(float* acc, const std::uint16_t* o, float w, std::int64_t n) {
  const __m512 wv = _mm512_set1_ps(w);
  std::int64_t i = 0;
  // The embedded-rounding forms: GCC treats _mm512_mul_ps and _mm512_add_ps as plain vector
  // arithmetic and, AVX-512F implying FMA, fuses them into one rounding.
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  for (; i + 16 <= n; i += 16) {
    const __m512 product = _mm512_maskz_mul_round_ps(kAll, bf16_simd::Widen16(o + i), wv, kNearest);
    _mm512_storeu_ps(acc + i, _mm512_maskz_add_round_ps(kAll, _mm512_loadu_ps(acc + i), product, kNearest));
  }
  AccumulatePlain(acc + i, o + i, w, n - i);
}

// ---- AVX2, 8 lanes -----------------------------------------------------------------------------
// (No FMA in the target, so a product and a sum stay two roundings.)
#define UNMASK_AVX2 __attribute__((target("avx2")))

UNMASK_AVX2 inline void Store8(std::uint16_t* p, __m256 f) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), bf16_simd::Round8(f));
}

UNMASK_AVX2 inline __m256 RoundTrip8(__m256 f) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(bf16_simd::RoundBits8(f), 16));
}

UNMASK_AVX2 void Round256(const float* in, std::int64_t n, std::uint16_t* out) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) Store8(out + i, _mm256_loadu_ps(in + i));
  RoundPlain(in + i, n - i, out + i);
}

UNMASK_AVX2 void AddScaled256(std::uint16_t* y, const std::uint16_t* o, float w, std::int64_t n) {
  const __m256 wv = _mm256_set1_ps(w);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 product = RoundTrip8(_mm256_mul_ps(bf16_simd::Widen8(o + i), wv));
    Store8(y + i, _mm256_add_ps(bf16_simd::Widen8(y + i), product));
  }
  AddScaledPlain(y + i, o + i, w, n - i);
}

UNMASK_AVX2 void Accumulate256(float* acc, const std::uint16_t* o, float w, std::int64_t n) {
  const __m256 wv = _mm256_set1_ps(w);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), _mm256_mul_ps(bf16_simd::Widen8(o + i), wv)));
  AccumulatePlain(acc + i, o + i, w, n - i);
}

// The widest form `path` allows on this CPU.
enum class Form { kPlain, kAvx2, kAvx512 };
Form FormFor(GemmPath path) {
  const CpuFeatures& cpu = HostCpuFeatures();
  if (path == GemmPath::kAvx512 && cpu.avx512f) return Form::kAvx512;
  if (path != GemmPath::kBlas && cpu.avx2) return Form::kAvx2;
  return Form::kPlain;
}

}  // namespace

void RoundToBf16(GemmPath path, const float* in, std::int64_t n, std::uint16_t* out) {
  switch (FormFor(path)) {
    case Form::kAvx512: return Round512(in, n, out);
    case Form::kAvx2: return Round256(in, n, out);
    case Form::kPlain: return RoundPlain(in, n, out);
  }
}

void AddScaledBf16(GemmPath path, std::uint16_t* y, const std::uint16_t* o, float w, std::int64_t n) {
  switch (FormFor(path)) {
    case Form::kAvx512: return AddScaled512(y, o, w, n);
    case Form::kAvx2: return AddScaled256(y, o, w, n);
    case Form::kPlain: return AddScaledPlain(y, o, w, n);
  }
}

void AccumulateScaled(GemmPath path, float* acc, const std::uint16_t* o, float w, std::int64_t n) {
  switch (FormFor(path)) {
    case Form::kAvx512: return Accumulate512(acc, o, w, n);
    case Form::kAvx2: return Accumulate256(acc, o, w, n);
    case Form::kPlain: return AccumulatePlain(acc, o, w, n);
  }
}

}  // namespace unmask::model
