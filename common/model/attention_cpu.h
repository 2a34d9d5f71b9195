// Bidirectional attention for bf16 rows on a CPU in one pass per head: scores, softmax and the
// weighted sum of values in float32, the result rounded to bf16 once. ATen's composition (layers.h:
// two bf16 matmuls, a scale, a bias and a softmax) rounds to bf16 after every operator and costs
// five operators' fixed time per generation per layer: in a batched step of unmask-kjv that was
// about 1 ms of one thread's time per generation, as much as half the step's linear layers.
// This is what PyTorch 2's fused CPU attention and flash attention on GPUs compute (float32 sums,
// one rounding), so its results are closer to the exact ones than the composition's, not equal to them.
//
// AVX-512F only (bf16 compute is chosen where the CPU has AVX512_BF16, cpu_features.h); SLEEF's
// expf for the exponentials. A row's result depends only on its own query, the keys, values and
// bias: never on the other rows, the threads or what else is packed in the batch.
#pragma once

#include <cstdint>

namespace unmask::model {

// One head of one sequence. Rows are head_dim contiguous bf16 values, `*_stride` elements apart.
// bias: `keys` float32 values per query row (0, or a large negative number for a key not to
// attend), bias_stride apart (0: one row for every query); null for none.
struct AttentionHead {
  const std::uint16_t* q = nullptr;
  std::int64_t q_stride = 0;
  const std::uint16_t* k = nullptr;
  std::int64_t k_stride = 0;
  const std::uint16_t* v = nullptr;
  std::int64_t v_stride = 0;
  const float* bias = nullptr;
  std::int64_t bias_stride = 0;
  std::uint16_t* out = nullptr;
  std::int64_t out_stride = 0;
};

// Whether AttendBf16 runs on this CPU in this build (AVX-512F and SLEEF) for this head_dim
// (a multiple of 16, at most kMaxAttentionHeadDim).
inline constexpr std::int64_t kMaxAttentionHeadDim = 256;
bool AttendBf16Runs(std::int64_t head_dim);

// out = softmax(q k^T * scale + bias) v for `queries` rows of q against `keys` rows of k and v.
// False, computing nothing, where AttendBf16Runs is false.
bool AttendBf16(const AttentionHead& head, std::int64_t queries, std::int64_t keys, std::int64_t head_dim, float scale);

}  // namespace unmask::model
