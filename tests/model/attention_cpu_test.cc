// attention_cpu.h and the bf16 CPU attention of layers.h over it: against softmax(q k^T / sqrt(d) +
// bias) v in float64, within one bf16 rounding of the exact result (ATen's bf16 composition, which
// rounds after every operator, is several times further off); a row's bits independent of the
// other rows; grouped KV heads, per-query (block-causal) and padding biases, strided rows.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/model/attention_cpu.h"
#include "common/model/layers.h"
#include "tests/fixtures/gemm_paths.h"

namespace unmask::model {
namespace {

at::Tensor Exact(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& bias) {
  const auto group = q.size(1) / k.size(1);
  const at::Tensor kd = k.to(at::kDouble).repeat_interleave(group, 1), vd = v.to(at::kDouble).repeat_interleave(group, 1);
  at::Tensor s = at::matmul(q.to(at::kDouble), kd.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (bias.defined()) s = s + bias.to(at::kDouble);
  return at::matmul(at::softmax(s, -1), vd);
}

// Largest |got - exact| over the spread of the exact values: one bf16 rounding is 2^-8 of a value.
double Error(const at::Tensor& got, const at::Tensor& exact) {
  return (got.to(at::kDouble) - exact).abs().max().item<double>() / exact.abs().max().item<double>();
}

struct Case {
  std::int64_t batch, heads, kv_heads, queries, keys, head_dim;
};

class AttentionCpuTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!AttendBf16Runs(GetParam().head_dim)) GTEST_SKIP() << "this CPU or build has no AVX-512 attention";
    path_ = std::make_unique<unmask::testing::ScopedGemmPath>(GemmPath::kAvx512);
  }
  std::unique_ptr<unmask::testing::ScopedGemmPath> path_;
};

TEST_P(AttentionCpuTest, IsWithinOneBf16RoundingOfTheExactResult) {
  const Case c = GetParam();
  at::manual_seed(c.keys * 31 + c.queries);
  const auto bf16 = at::TensorOptions().dtype(at::kBFloat16);
  const at::Tensor q = at::randn({c.batch, c.heads, c.queries, c.head_dim}, bf16) * 2;
  const at::Tensor k = at::randn({c.batch, c.kv_heads, c.keys, c.head_dim}, bf16) * 2;
  const at::Tensor v = at::randn({c.batch, c.kv_heads, c.keys, c.head_dim}, bf16);
  // Padding: the last key of the first sequence does not attend; block-causal over blocks of 8.
  at::Tensor mask = at::ones({c.batch, c.keys}, at::kLong);
  mask[0][c.keys - 1] = 0;
  const at::Tensor padding = KeyPaddingBias(mask);
  const at::Tensor causal =
      WithBlockCausalBias(padding, std::max<std::int64_t>(0, c.keys - c.queries), c.queries, c.keys, 8, at::kCPU);
  for (const at::Tensor& bias : {at::Tensor(), padding, causal}) {
    const at::Tensor got = Attention(q, k, v, bias, 0);
    ASSERT_EQ(got.sizes(), q.sizes());
    ASSERT_EQ(got.scalar_type(), at::kBFloat16);
    const at::Tensor exact = Exact(q, k, v, bias);
    EXPECT_LE(Error(got, exact), 1.0 / 256) << "bias " << (bias.defined() ? bias.sizes() : at::IntArrayRef{});
    // ATen's composition, for scale: its error is what the fused kernel improves on.
    at::Tensor composed;
    {
      unmask::testing::ScopedGemmPath blas(GemmPath::kBlas);
      composed = Attention(q, k, v, bias, 0);
    }
    EXPECT_LE(Error(got, exact), Error(composed, exact));
  }
}

// Each query row gives the same bits alone as among the others (what batched = alone rests on),
// and q may be a strided view (the packed rows of several heads).
TEST_P(AttentionCpuTest, ARowsBitsDoNotDependOnTheOtherRows) {
  const Case c = GetParam();
  at::manual_seed(7);
  const auto bf16 = at::TensorOptions().dtype(at::kBFloat16);
  const at::Tensor packed = at::randn({c.batch, c.queries, c.heads, c.head_dim}, bf16);
  const at::Tensor q = packed.transpose(1, 2);  // [B, H, Tq, hd], rows heads * hd apart
  const at::Tensor k = at::randn({c.batch, c.kv_heads, c.keys, c.head_dim}, bf16);
  const at::Tensor v = at::randn({c.batch, c.kv_heads, c.keys, c.head_dim}, bf16);
  const at::Tensor all = Attention(q, k, v, at::Tensor(), 0).contiguous();
  for (std::int64_t i = 0; i < c.queries; i += 3) {
    const at::Tensor one = Attention(q.narrow(2, i, 1), k, v, at::Tensor(), 0).contiguous();
    ASSERT_TRUE(at::equal(one, all.narrow(2, i, 1))) << "row " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionCpuTest,
                         ::testing::Values(Case{1, 4, 4, 32, 136, 64},   // unmask-kjv, a dual-cache step
                                           Case{2, 4, 2, 13, 77, 64},    // grouped KV heads, tails
                                           Case{1, 2, 1, 5, 3, 128},     // fewer keys than a vector
                                           Case{1, 2, 2, 9, 40, 48}));   // head_dim not a multiple of 64

TEST(AttentionCpuRunsTest, RefusesWhatItCannotCompute) {
  EXPECT_FALSE(AttendBf16Runs(0));
  EXPECT_FALSE(AttendBf16Runs(40));  // not a multiple of 16
  EXPECT_FALSE(AttendBf16Runs(kMaxAttentionHeadDim + 16));
  AttentionHead head;
  EXPECT_FALSE(AttendBf16(head, 4, 4, 40, 0.5f));
  // float32 keeps ATen's composition, whose bits the golden tests pin down.
  const at::Tensor q = at::randn({1, 2, 4, 64}), k = at::randn({1, 2, 6, 64});
  unmask::testing::ScopedGemmPath path(BestGemmPath(HostCpuFeatures()));
  const at::Tensor composed = at::matmul(at::softmax(at::matmul(q, k.transpose(-2, -1)) * 0.125, -1), k);
  EXPECT_TRUE(at::equal(Attention(q, k, k, at::Tensor(), 0), composed));
}

}  // namespace
}  // namespace unmask::model
