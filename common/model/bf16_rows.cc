// bf16_rows.h's loops: plain C++, and AVX-512F and AVX2 forms compiled through target attributes
// only (this file runs on any x86-64; the wide forms are called only where the CPU has them).
#include "common/model/bf16_rows.h"

#include <cmath>

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

// One head's row: out[d] for d in [from, half), and its partner d + half.
__attribute__((noinline)) void RotatePlain(const std::uint16_t* x, std::int64_t half, const float* cos, const float* sin,
                                           std::uint16_t* out, std::int64_t from) {
  for (std::int64_t d = from; d < half; ++d) {
    const float lo = WidenBf16(x[d]), hi = WidenBf16(x[d + half]);
    out[d] = RoundBf16(lo * cos[d] - hi * sin[d]);
    out[d + half] = RoundBf16(hi * cos[d + half] + lo * sin[d + half]);
  }
}

__attribute__((noinline)) void SquaresPlain(const std::uint16_t* x, std::int64_t n, float* squares) {
  for (std::int64_t i = 0; i < n; ++i) squares[i] = WidenBf16(x[i]) * WidenBf16(x[i]);
}

// One row from element `from` on.
__attribute__((noinline)) void NormRowPlain(const std::uint16_t* x, std::int64_t d, float r, const std::uint16_t* w,
                                            std::uint16_t* out, std::int64_t from) {
  for (std::int64_t i = from; i < d; ++i) out[i] = RoundBf16(WidenBf16(w[i]) * WidenBf16(RoundBf16(WidenBf16(x[i]) * r)));
}

// ---- AVX-512F, 16 lanes ------------------------------------------------------------------------
#define UNMASK_AVX512 __attribute__((target("avx512f")))
using lane_reduce::kAll16;

UNMASK_AVX512 inline void Store16(std::uint16_t* p, __m512 f) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bf16_simd::Round16(f));
}

// f rounded to bf16 and widened again: the rounded bits moved back to the top half.
UNMASK_AVX512 inline __m512 RoundTrip16(__m512 f) {
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll16, bf16_simd::RoundBits16(f), 16));
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
    const __m512 product = _mm512_maskz_mul_round_ps(kAll16, bf16_simd::Widen16(o + i), wv, kNearest);
    _mm512_storeu_ps(acc + i, _mm512_maskz_add_round_ps(kAll16, _mm512_loadu_ps(acc + i), product, kNearest));
  }
  AccumulatePlain(acc + i, o + i, w, n - i);
}

UNMASK_AVX512 void Rotate512(const std::uint16_t* x, std::int64_t half, const float* cos, const float* sin,
                              std::uint16_t* out) {
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  std::int64_t d = 0;
  for (; d + 16 <= half; d += 16) {
    const __m512 lo = bf16_simd::Widen16(x + d), hi = bf16_simd::Widen16(x + d + half);
    const __m512 lo_cos = _mm512_maskz_mul_round_ps(kAll16, lo, _mm512_loadu_ps(cos + d), kNearest);
    const __m512 hi_sin = _mm512_maskz_mul_round_ps(kAll16, hi, _mm512_loadu_ps(sin + d), kNearest);
    const __m512 hi_cos = _mm512_maskz_mul_round_ps(kAll16, hi, _mm512_loadu_ps(cos + d + half), kNearest);
    const __m512 lo_sin = _mm512_maskz_mul_round_ps(kAll16, lo, _mm512_loadu_ps(sin + d + half), kNearest);
    Store16(out + d, _mm512_maskz_sub_round_ps(kAll16, lo_cos, hi_sin, kNearest));
    Store16(out + d + half, _mm512_maskz_add_round_ps(kAll16, hi_cos, lo_sin, kNearest));
  }
  RotatePlain(x, half, cos, sin, out, d);
}

UNMASK_AVX512 void Squares512(const std::uint16_t* x, std::int64_t n, float* squares) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = bf16_simd::Widen16(x + i);
    _mm512_storeu_ps(squares + i, _mm512_mul_ps(v, v));
  }
  SquaresPlain(x + i, n - i, squares + i);
}

UNMASK_AVX512 void NormRow512(const std::uint16_t* x, std::int64_t d, float r, const std::uint16_t* w, std::uint16_t* out) {
  const __m512 rv = _mm512_set1_ps(r);
  std::int64_t i = 0;
  for (; i + 16 <= d; i += 16)
    Store16(out + i, _mm512_mul_ps(bf16_simd::Widen16(w + i), RoundTrip16(_mm512_mul_ps(bf16_simd::Widen16(x + i), rv))));
  NormRowPlain(x, d, r, w, out, i);
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

UNMASK_AVX2 void Rotate256(const std::uint16_t* x, std::int64_t half, const float* cos, const float* sin,
                            std::uint16_t* out) {
  std::int64_t d = 0;
  for (; d + 8 <= half; d += 8) {
    const __m256 lo = bf16_simd::Widen8(x + d), hi = bf16_simd::Widen8(x + d + half);
    const __m256 lo_cos = _mm256_mul_ps(lo, _mm256_loadu_ps(cos + d)), hi_sin = _mm256_mul_ps(hi, _mm256_loadu_ps(sin + d));
    const __m256 hi_cos = _mm256_mul_ps(hi, _mm256_loadu_ps(cos + d + half));
    const __m256 lo_sin = _mm256_mul_ps(lo, _mm256_loadu_ps(sin + d + half));
    Store8(out + d, _mm256_sub_ps(lo_cos, hi_sin));
    Store8(out + d + half, _mm256_add_ps(hi_cos, lo_sin));
  }
  RotatePlain(x, half, cos, sin, out, d);
}

UNMASK_AVX2 void Squares256(const std::uint16_t* x, std::int64_t n, float* squares) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = bf16_simd::Widen8(x + i);
    _mm256_storeu_ps(squares + i, _mm256_mul_ps(v, v));
  }
  SquaresPlain(x + i, n - i, squares + i);
}

UNMASK_AVX2 void NormRow256(const std::uint16_t* x, std::int64_t d, float r, const std::uint16_t* w, std::uint16_t* out) {
  const __m256 rv = _mm256_set1_ps(r);
  std::int64_t i = 0;
  for (; i + 8 <= d; i += 8)
    Store8(out + i, _mm256_mul_ps(bf16_simd::Widen8(w + i), RoundTrip8(_mm256_mul_ps(bf16_simd::Widen8(x + i), rv))));
  NormRowPlain(x, d, r, w, out, i);
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

void RotateBf16(GemmPath path, const std::uint16_t* x, std::int64_t rows, std::int64_t heads, std::int64_t head_dim,
                const float* cos, const float* sin, std::uint16_t* out) {
  const std::int64_t half = head_dim / 2;
  const Form form = FormFor(path);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float *c = cos + r * head_dim, *s = sin + r * head_dim;
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::int64_t at = (r * heads + h) * head_dim;
      switch (form) {
        case Form::kAvx512: Rotate512(x + at, half, c, s, out + at); break;
        case Form::kAvx2: Rotate256(x + at, half, c, s, out + at); break;
        case Form::kPlain: RotatePlain(x + at, half, c, s, out + at, 0); break;
      }
    }
  }
}

void SquaresOfBf16(GemmPath path, const std::uint16_t* x, std::int64_t n, float* squares) {
  switch (FormFor(path)) {
    case Form::kAvx512: return Squares512(x, n, squares);
    case Form::kAvx2: return Squares256(x, n, squares);
    case Form::kPlain: return SquaresPlain(x, n, squares);
  }
}

void RmsNormRowsBf16(GemmPath path, const std::uint16_t* x, std::int64_t rows, std::int64_t d, const float* variance,
                     float eps, const std::uint16_t* weight, std::uint16_t* out) {
  const Form form = FormFor(path);
  for (std::int64_t row = 0; row < rows; ++row) {
    const float r = 1.0f / std::sqrt(variance[row] + eps);  // ATen's add of eps, then its rsqrt: 1 / sqrt
    switch (form) {
      case Form::kAvx512: NormRow512(x + row * d, d, r, weight, out + row * d); break;
      case Form::kAvx2: NormRow256(x + row * d, d, r, weight, out + row * d); break;
      case Form::kPlain: NormRowPlain(x + row * d, d, r, weight, out + row * d, 0); break;
    }
  }
}

}  // namespace unmask::model
