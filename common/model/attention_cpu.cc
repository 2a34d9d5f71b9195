// attention_cpu.h: AVX-512F through target attributes only (this file runs on any x86-64; the
// kernel is called only where the CPU has it).
#include "common/model/attention_cpu.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/model/bf16_bits.h"
#include "common/model/cpu_features.h"
#include "common/model/lane_reduce.h"
#include "common/model/sleef_forms.h"

namespace unmask::model {
namespace {

#ifdef UNMASK_HAVE_SLEEF
#define UNMASK_AVX512 __attribute__((target("avx512f")))
using lane_reduce::kAll16;
constexpr int kRows = 4;  // query rows computed together: each key's values are loaded once for them

// Scratch of one thread: the keys transposed to float32 ([head_dim][padded keys]) and kRows rows of scores.
struct Scratch {
  std::vector<float> keys_t, scores;
};

// The keys as float32 columns: keys_t[d * padded + j] = k[j][d]; the padding keys are 0.
void TransposeKeys(const AttentionHead& h, std::int64_t keys, std::int64_t padded, std::int64_t head_dim, float* keys_t) {
  std::fill(keys_t, keys_t + head_dim * padded, 0.0f);
  for (std::int64_t j = 0; j < keys; ++j) {
    const std::uint16_t* row = h.k + j * h.k_stride;
    for (std::int64_t d = 0; d < head_dim; ++d) keys_t[d * padded + j] = WidenBf16(row[d]);
  }
}

// scores[r][j] = (q_r . k_j) * scale + bias_r[j] for R query rows and the NV * 16 keys from j0,
// -inf past the last key. R * NV accumulators, so that the fused multiply-adds do not wait on each other.
template <int R, int NV>
UNMASK_AVX512 void ScoreBlock(const AttentionHead& h, std::int64_t row0, std::int64_t j0, std::int64_t keys,
                              std::int64_t padded, std::int64_t head_dim, float scale, const float (*q)[kMaxAttentionHeadDim],
                              const float* keys_t, float* scores) {
  __m512 acc[R][NV];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < NV; ++c) acc[r][c] = _mm512_setzero_ps();
  for (std::int64_t d = 0; d < head_dim; ++d) {
    __m512 kv[NV];
#pragma GCC unroll 4
    for (int c = 0; c < NV; ++c) kv[c] = _mm512_loadu_ps(keys_t + d * padded + j0 + 16 * c);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512 qd = _mm512_set1_ps(q[r][d]);
#pragma GCC unroll 4
      for (int c = 0; c < NV; ++c) acc[r][c] = _mm512_fmadd_ps(qd, kv[c], acc[r][c]);
    }
  }
  const __m512 scale_v = _mm512_set1_ps(scale), minus_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
#pragma GCC unroll 4
  for (int c = 0; c < NV; ++c) {
    const std::int64_t j = j0 + 16 * c, valid = std::min<std::int64_t>(16, keys - j);
    const __mmask16 live = static_cast<__mmask16>((1u << valid) - 1u);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      __m512 sv = _mm512_mul_ps(acc[r][c], scale_v);
      if (h.bias != nullptr)
        sv = _mm512_add_ps(sv, _mm512_maskz_loadu_ps(live, h.bias + (row0 + r) * h.bias_stride + j));
      _mm512_storeu_ps(scores + r * padded + j, _mm512_mask_mov_ps(minus_inf, live, sv));
    }
  }
}

template <int R>
UNMASK_AVX512 void Scores(const AttentionHead& h, std::int64_t row0, std::int64_t keys, std::int64_t padded,
                          std::int64_t head_dim, float scale, const float* keys_t, float* scores) {
  alignas(64) float q[R][kMaxAttentionHeadDim];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const std::uint16_t* row = h.q + (row0 + r) * h.q_stride;
    for (std::int64_t d = 0; d < head_dim; d += 16) _mm512_store_ps(q[r] + d, bf16_simd::Widen16(row + d));
  }
  std::int64_t j = 0;
  for (; j + 64 <= padded; j += 64) ScoreBlock<R, 4>(h, row0, j, keys, padded, head_dim, scale, q, keys_t, scores);
  switch ((padded - j) / 16) {
    case 3: ScoreBlock<R, 3>(h, row0, j, keys, padded, head_dim, scale, q, keys_t, scores); break;
    case 2: ScoreBlock<R, 2>(h, row0, j, keys, padded, head_dim, scale, q, keys_t, scores); break;
    case 1: ScoreBlock<R, 1>(h, row0, j, keys, padded, head_dim, scale, q, keys_t, scores); break;
    default: break;
  }
}

// A row of scores made its softmax's numerators exp(s - max); returns their sum.
UNMASK_AVX512 float Exponentiate(float* s, std::int64_t padded) {
  __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (std::int64_t j = 0; j < padded; j += 16) m = lane_reduce::Max(m, _mm512_loadu_ps(s + j));
  const __m512 max_v = _mm512_set1_ps(lane_reduce::Max16(m));
  __m512 sum = _mm512_setzero_ps();
  for (std::int64_t j = 0; j < padded; j += 16) {
    const __m512 e = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_loadu_ps(s + j), max_v));
    _mm512_storeu_ps(s + j, e);
    sum = _mm512_add_ps(sum, e);
  }
  return lane_reduce::Sum16(sum);
}

// out_r = (sum_j p_r[j] v_j) / total_r for R rows, dims [d0, d0 + 16 * chunks), rounded to bf16.
template <int R, int chunks>
UNMASK_AVX512 void WeightedValueChunk(const AttentionHead& h, std::int64_t row0, std::int64_t d0, std::int64_t keys,
                                      std::int64_t padded, const float* p, const float* totals) {
  __m512 acc[R][chunks];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < chunks; ++c) acc[r][c] = _mm512_setzero_ps();
  for (std::int64_t j = 0; j < keys; ++j) {
    const std::uint16_t* row = h.v + j * h.v_stride + d0;
    __m512 v[chunks];
#pragma GCC unroll 4
    for (int c = 0; c < chunks; ++c) v[c] = bf16_simd::Widen16(row + 16 * c);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512 w = _mm512_set1_ps(p[r * padded + j]);
#pragma GCC unroll 4
      for (int c = 0; c < chunks; ++c) acc[r][c] = _mm512_fmadd_ps(w, v[c], acc[r][c]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const __m512 total = _mm512_set1_ps(totals[r]);
    std::uint16_t* out = h.out + (row0 + r) * h.out_stride + d0;
#pragma GCC unroll 4
    for (int c = 0; c < chunks; ++c)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16 * c),
                          bf16_simd::Round16(_mm512_maskz_div_ps(kAll16, acc[r][c], total)));
  }
}

// out_r = (sum_j p_r[j] v_j) / total_r for R rows, 64 dims at a time, rounded to bf16.
template <int R>
UNMASK_AVX512 void WeightedValues(const AttentionHead& h, std::int64_t row0, std::int64_t keys, std::int64_t padded,
                                  std::int64_t head_dim, const float* p, const float* totals) {
  std::int64_t d0 = 0;
  for (; d0 + 64 <= head_dim; d0 += 64) WeightedValueChunk<R, 4>(h, row0, d0, keys, padded, p, totals);
  switch ((head_dim - d0) / 16) {
    case 3: WeightedValueChunk<R, 3>(h, row0, d0, keys, padded, p, totals); break;
    case 2: WeightedValueChunk<R, 2>(h, row0, d0, keys, padded, p, totals); break;
    case 1: WeightedValueChunk<R, 1>(h, row0, d0, keys, padded, p, totals); break;
    default: break;
  }
}

template <int R>
UNMASK_AVX512 void Rows(const AttentionHead& h, std::int64_t row0, std::int64_t keys, std::int64_t padded,
                        std::int64_t head_dim, float scale, Scratch& s) {
  Scores<R>(h, row0, keys, padded, head_dim, scale, s.keys_t.data(), s.scores.data());
  float totals[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) totals[r] = Exponentiate(s.scores.data() + r * padded, padded);
  WeightedValues<R>(h, row0, keys, padded, head_dim, s.scores.data(), totals);
}

UNMASK_AVX512 void Attend512(const AttentionHead& h, std::int64_t queries, std::int64_t keys, std::int64_t head_dim,
                             float scale) {
  thread_local Scratch s;
  const std::int64_t padded = (keys + 15) / 16 * 16;
  s.keys_t.resize(static_cast<std::size_t>(head_dim * padded));
  s.scores.resize(static_cast<std::size_t>(kRows * padded));
  TransposeKeys(h, keys, padded, head_dim, s.keys_t.data());
  std::int64_t i = 0;
  for (; i + kRows <= queries; i += kRows) Rows<kRows>(h, i, keys, padded, head_dim, scale, s);
  switch (queries - i) {
    case 3: Rows<3>(h, i, keys, padded, head_dim, scale, s); break;
    case 2: Rows<2>(h, i, keys, padded, head_dim, scale, s); break;
    case 1: Rows<1>(h, i, keys, padded, head_dim, scale, s); break;
    default: break;
  }
}
#endif  // UNMASK_HAVE_SLEEF

}  // namespace

bool AttendBf16Runs(std::int64_t head_dim) {
#ifdef UNMASK_HAVE_SLEEF
  return HostCpuFeatures().avx512f && head_dim > 0 && head_dim % 16 == 0 && head_dim <= kMaxAttentionHeadDim;
#else
  (void)head_dim;
  return false;
#endif
}

bool AttendBf16(const AttentionHead& head, std::int64_t queries, std::int64_t keys, std::int64_t head_dim, float scale) {
  if (!AttendBf16Runs(head_dim) || queries <= 0 || keys <= 0) return false;
#ifdef UNMASK_HAVE_SLEEF
  Attend512(head, queries, keys, head_dim, scale);
#endif
  return true;
}

}  // namespace unmask::model
