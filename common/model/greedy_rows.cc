// greedy_rows.h: AVX-512F and AVX2 forms through target attributes only (this file runs on any
// x86-64; a form is called only where the CPU has it). A row is read in chunks of 16 values
// widened to float32 (bf16 widening is exact); the chunk past the row's end is padded with -inf.
#include "common/model/greedy_rows.h"

#include <ATen/Parallel.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/model/activation_rows.h"
#include "common/model/bf16_bits.h"
#include "common/model/lane_reduce.h"
#include "common/model/sleef_forms.h"

namespace unmask::model {
namespace {

constexpr float kNegInfF = -std::numeric_limits<float>::infinity();
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// 16 values of a row from `i` as float32, -inf past `vocab`.
inline void Chunk16(const float* row, std::int64_t i, std::int64_t vocab, float* out) {
  const std::int64_t n = std::min<std::int64_t>(16, vocab - i);
  std::memcpy(out, row + i, static_cast<std::size_t>(n) * sizeof(float));
  std::fill(out + n, out + 16, kNegInfF);
}
inline void Chunk16(const std::uint16_t* row, std::int64_t i, std::int64_t vocab, float* out) {
  const std::int64_t n = std::min<std::int64_t>(16, vocab - i);
  for (std::int64_t j = 0; j < n; ++j) out[j] = WidenBf16(row[i + j]);
  std::fill(out + n, out + 16, kNegInfF);
}

// The row's structure in the values' own order: the largest value (NaN where the row has one),
// the argmax, and whether a NaN sits outside `excluded` (the softmax is then NaN).
struct RowMax {
  float max = kNegInfF;
  std::int64_t x0 = 0;
  bool nan_in_softmax = false;
};

bool IsExcluded(std::int64_t i, const std::vector<std::int64_t>& excluded) {
  return std::find(excluded.begin(), excluded.end(), i) != excluded.end();
}

// The softmax's max when an excluded id holds the row's max: the largest of the others (rare).
template <typename T>
double MaxOutside(const T* row, std::int64_t vocab, const std::vector<std::int64_t>& excluded) {
  double m = kNegInf;
  float chunk[16];
  for (std::int64_t i = 0; i < vocab; i += 16) {
    Chunk16(row, i, vocab, chunk);
    for (int j = 0; j < 16 && i + j < vocab; ++j)
      if (!IsExcluded(i + j, excluded)) m = std::max(m, static_cast<double>(chunk[j]));
  }
  return m;
}

#ifdef UNMASK_HAVE_SLEEF
#define UNMASK_AVX512 __attribute__((target("avx512f")))
#define UNMASK_AVX2 __attribute__((target("avx2,fma")))

// Lanes of `v` (16 floats from `i`) whose ids are excluded, set to -inf through `buf`.
inline bool HasExcluded(std::int64_t i, const std::vector<std::int64_t>& excluded) {
  for (std::int64_t e : excluded)
    if (e >= i && e < i + 16) return true;
  return false;
}
inline void MaskExcluded(std::int64_t i, const std::vector<std::int64_t>& excluded, float* buf) {
  for (std::int64_t e : excluded)
    if (e >= i && e < i + 16) buf[e - i] = kNegInfF;
}

// The lanes summed in order, ((l0 + l1) + l2) + ... + l7.
inline double SumLanes(const double* lanes) {
  double sum = lanes[0];
  for (int l = 1; l < 8; ++l) sum += lanes[l];
  return sum;
}

// ---- AVX-512F ----------------------------------------------------------------------------------
UNMASK_AVX512 inline __m512 Load16(const float* row, std::int64_t i, std::int64_t vocab, float* buf) {
  if (i + 16 <= vocab) return _mm512_loadu_ps(row + i);
  Chunk16(row, i, vocab, buf);
  return _mm512_loadu_ps(buf);
}
UNMASK_AVX512 inline __m512 Load16(const std::uint16_t* row, std::int64_t i, std::int64_t vocab, float* buf) {
  if (i + 16 <= vocab) return bf16_simd::Widen16(row + i);
  Chunk16(row, i, vocab, buf);
  return _mm512_loadu_ps(buf);
}

template <typename T>
UNMASK_AVX512 RowMax ScanAvx512(const T* row, std::int64_t vocab) {
  __m512 vmax = _mm512_set1_ps(kNegInfF);
  __mmask16 nan = 0;
  float buf[16];
  for (std::int64_t i = 0; i < vocab; i += 16) {
    const __m512 v = Load16(row, i, vocab, buf);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    vmax = lane_reduce::Max(vmax, v);
  }
  RowMax r;
  if (nan != 0) {
    r.max = std::numeric_limits<float>::quiet_NaN();
    return r;
  }
  r.max = lane_reduce::Max16(vmax);
  const __m512 want = _mm512_set1_ps(r.max);
  for (std::int64_t i = 0; i < vocab; i += 16) {
    const __mmask16 hit = _mm512_cmp_ps_mask(Load16(row, i, vocab, buf), want, _CMP_EQ_OQ);
    if (hit != 0) {
      r.x0 = i + __builtin_ctz(hit);
      break;
    }
  }
  return r;
}

// The eight float64 lanes' sums of exp(x - m), in the order every form keeps: lane l gets
// elements 8c + l of the row (chunk c of 8) in chunk order; excluded ids and the padding add 0.
template <typename T>
UNMASK_AVX512 double ExpSumAvx512(const T* row, std::int64_t vocab, double m, const std::vector<std::int64_t>& excluded) {
  __m512d acc = _mm512_setzero_pd();
  const __m512d mv = _mm512_set1_pd(m);
  float buf[16];
  for (std::int64_t i = 0; i < vocab; i += 16) {
    __m512 v = Load16(row, i, vocab, buf);
    if (HasExcluded(i, excluded)) {
      _mm512_storeu_ps(buf, v);
      MaskExcluded(i, excluded, buf);
      v = _mm512_loadu_ps(buf);
    }
    // (The all-lanes masked forms: GCC 12's unmasked ones pass an "undefined" source.)
    const __m512d lo = _mm512_maskz_cvtps_pd(0xFF, lane_reduce::Half<0>(v));
    const __m512d hi = _mm512_maskz_cvtps_pd(0xFF, lane_reduce::Half<1>(v));
    acc = _mm512_add_pd(acc, Sleef_expd8_u10avx512f(_mm512_sub_pd(lo, mv)));
    acc = _mm512_add_pd(acc, Sleef_expd8_u10avx512f(_mm512_sub_pd(hi, mv)));
  }
  double lanes[8];
  _mm512_storeu_pd(lanes, acc);
  return SumLanes(lanes);
}

// ---- AVX2 ---------------------------------------------------------------------------------------
// 16 values from `i` as two vectors of 8.
UNMASK_AVX2 inline void Load8x2(const float* row, std::int64_t i, std::int64_t vocab, float* buf, __m256* v) {
  const float* p = row + i;
  if (i + 16 > vocab) Chunk16(row, i, vocab, buf), p = buf;
  v[0] = _mm256_loadu_ps(p);
  v[1] = _mm256_loadu_ps(p + 8);
}
UNMASK_AVX2 inline void Load8x2(const std::uint16_t* row, std::int64_t i, std::int64_t vocab, float* buf, __m256* v) {
  if (i + 16 <= vocab) {
    v[0] = bf16_simd::Widen8(row + i);
    v[1] = bf16_simd::Widen8(row + i + 8);
    return;
  }
  Chunk16(row, i, vocab, buf);
  v[0] = _mm256_loadu_ps(buf);
  v[1] = _mm256_loadu_ps(buf + 8);
}

template <typename T>
UNMASK_AVX2 RowMax ScanAvx2(const T* row, std::int64_t vocab) {
  __m256 vmax = _mm256_set1_ps(kNegInfF);
  __m256 nan = _mm256_setzero_ps();
  float buf[16];
  __m256 v[2];
  for (std::int64_t i = 0; i < vocab; i += 16) {
    Load8x2(row, i, vocab, buf, v);
    for (const __m256& h : v) {
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(h, h, _CMP_UNORD_Q));
      vmax = _mm256_max_ps(vmax, h);
    }
  }
  RowMax r;
  if (_mm256_movemask_ps(nan) != 0) {
    r.max = std::numeric_limits<float>::quiet_NaN();
    return r;
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, vmax);
  r.max = *std::max_element(lanes, lanes + 8);
  const __m256 want = _mm256_set1_ps(r.max);
  for (std::int64_t i = 0; i < vocab; i += 16) {
    Load8x2(row, i, vocab, buf, v);
    const int hit = _mm256_movemask_ps(_mm256_cmp_ps(v[0], want, _CMP_EQ_OQ)) |
                    (_mm256_movemask_ps(_mm256_cmp_ps(v[1], want, _CMP_EQ_OQ)) << 8);
    if (hit != 0) {
      r.x0 = i + __builtin_ctz(static_cast<unsigned>(hit));
      break;
    }
  }
  return r;
}

template <typename T>
UNMASK_AVX2 double ExpSumAvx2(const T* row, std::int64_t vocab, double m, const std::vector<std::int64_t>& excluded) {
  __m256d acc_lo = _mm256_setzero_pd(), acc_hi = _mm256_setzero_pd();  // lanes 0-3 and 4-7
  const __m256d mv = _mm256_set1_pd(m);
  float buf[16];
  __m256 v[2];
  for (std::int64_t i = 0; i < vocab; i += 16) {
    Load8x2(row, i, vocab, buf, v);
    if (HasExcluded(i, excluded)) {
      _mm256_storeu_ps(buf, v[0]);
      _mm256_storeu_ps(buf + 8, v[1]);
      MaskExcluded(i, excluded, buf);
      v[0] = _mm256_loadu_ps(buf);
      v[1] = _mm256_loadu_ps(buf + 8);
    }
    for (const __m256& h : v) {
      acc_lo = _mm256_add_pd(acc_lo, Sleef_expd4_u10avx2(_mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(h)), mv)));
      acc_hi = _mm256_add_pd(acc_hi, Sleef_expd4_u10avx2(_mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(h, 1)), mv)));
    }
  }
  double lanes[8];
  _mm256_storeu_pd(lanes, acc_lo);
  _mm256_storeu_pd(lanes + 4, acc_hi);
  return SumLanes(lanes);
}
#endif  // UNMASK_HAVE_SLEEF

using Form = SleefForm;

// One row: the scan, then the softmax's max and sum, as greedy_rows.h says.
template <typename T>
void Row(Form form, const T* row, std::int64_t vocab, const std::vector<std::int64_t>& excluded, std::int64_t* x0,
         double* confidence) {
#ifdef UNMASK_HAVE_SLEEF
  RowMax r = form == Form::kAvx512 ? ScanAvx512(row, vocab) : ScanAvx2(row, vocab);
  if (std::isnan(r.max)) {  // argmax: the first NaN; the softmax is NaN unless every NaN is excluded
    float chunk[16];
    bool found = false;
    for (std::int64_t i = 0; i < vocab; i += 16) {
      Chunk16(row, i, vocab, chunk);
      for (int j = 0; j < 16 && i + j < vocab; ++j) {
        if (!std::isnan(chunk[j])) continue;
        if (!found) r.x0 = i + j, found = true;
        if (!IsExcluded(i + j, excluded)) r.nan_in_softmax = true;
      }
    }
    if (r.nan_in_softmax) {
      *x0 = r.x0;
      *confidence = std::numeric_limits<double>::quiet_NaN();
      return;
    }
  }
  bool max_excluded = std::isnan(r.max);
  for (std::int64_t e : excluded) {
    if (e < 0 || e >= vocab) continue;
    float v[16];
    Chunk16(row, e, vocab, v);
    if (!(v[0] < r.max)) max_excluded = true;
  }
  const double m = max_excluded ? MaxOutside(row, vocab, excluded) : static_cast<double>(r.max);
  const double sum = form == Form::kAvx512 ? ExpSumAvx512(row, vocab, m, excluded) : ExpSumAvx2(row, vocab, m, excluded);
  float v0[16];
  Chunk16(row, r.x0, vocab, v0);
  const double numerator = std::exp((IsExcluded(r.x0, excluded) ? kNegInf : static_cast<double>(v0[0])) - m);
  *x0 = r.x0;
  *confidence = numerator * (1.0 / sum);
#else
  (void)form, (void)row, (void)vocab, (void)excluded, (void)x0, (void)confidence;
#endif
}

template <typename T>
bool Run(GemmPath path, const T* logits, std::int64_t rows, std::int64_t vocab,
         const std::vector<std::int64_t>& excluded, std::int64_t* x0, double* confidence) {
  const Form form = SleefFormFor(path);
  if (form == Form::kNone) return false;
  if (rows <= 0 || vocab <= 0) return true;
  at::parallel_for(0, rows, std::max<std::int64_t>(1, 65536 / vocab), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) Row(form, logits + r * vocab, vocab, excluded, x0 + r, confidence + r);
  });
  return true;
}

}  // namespace

bool GreedyConfidenceRuns(GemmPath path) { return SleefFormFor(path) != Form::kNone; }

bool GreedyConfidenceF32(GemmPath path, const float* logits, std::int64_t rows, std::int64_t vocab,
                         const std::vector<std::int64_t>& excluded, std::int64_t* x0, double* confidence) {
  return Run(path, logits, rows, vocab, excluded, x0, confidence);
}

bool GreedyConfidenceBf16(GemmPath path, const std::uint16_t* logits, std::int64_t rows, std::int64_t vocab,
                          const std::vector<std::int64_t>& excluded, std::int64_t* x0, double* confidence) {
  return Run(path, logits, rows, vocab, excluded, x0, confidence);
}

}  // namespace unmask::model
