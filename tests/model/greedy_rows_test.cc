// greedy_rows.h on every path: the argmax and the float64 softmax confidence ATen's composition
// (logits.to(kDouble), argmax, softmax, gather) gives, within the float64 sum's last bits (1e-13); the same
// bits on both vector forms, whatever the rows around; excluded ids, NaN and -inf rows as ATen.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/model/activation_rows.h"
#include "common/model/greedy_rows.h"
#include "common/sampler/sampling_ops.h"
#include "tests/fixtures/gemm_paths.h"

namespace unmask::model {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Picks {
  std::vector<std::int64_t> x0;
  std::vector<double> confidence;
  bool ran = false;
};

Picks RunLoop(GemmPath path, const at::Tensor& logits, const std::vector<std::int64_t>& excluded = {}) {
  const at::Tensor l = logits.contiguous();
  Picks p;
  p.x0.assign(static_cast<std::size_t>(l.size(0)), -1);
  p.confidence.assign(static_cast<std::size_t>(l.size(0)), -1.0);
  p.ran = l.scalar_type() == at::kFloat
              ? GreedyConfidenceF32(path, l.data_ptr<float>(), l.size(0), l.size(1), excluded, p.x0.data(),
                                    p.confidence.data())
              : GreedyConfidenceBf16(path, static_cast<const std::uint16_t*>(l.data_ptr()), l.size(0), l.size(1),
                                     excluded, p.x0.data(), p.confidence.data());
  return p;
}

// What the fast sampler computed before: ATen's operators in float64, excluded ids -inf after the argmax.
Picks Aten(const at::Tensor& logits, const std::vector<std::int64_t>& excluded = {}) {
  at::Tensor l = logits.to(at::kDouble);
  const at::Tensor x0 = l.argmax(-1);
  for (std::int64_t e : excluded) l.select(-1, e).fill_(-kInf);
  const at::Tensor c = at::softmax(l, -1).gather(-1, x0.unsqueeze(-1)).squeeze(-1).contiguous();
  Picks p;
  p.x0.assign(x0.data_ptr<std::int64_t>(), x0.data_ptr<std::int64_t>() + x0.numel());
  p.confidence.assign(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  p.ran = true;
  return p;
}

// Logits like a small model's: normal, spread 3, with a few rows' maxima repeated (ties) and a
// confident row (one logit far above the rest: confidence 1.0).
at::Tensor Logits(std::int64_t rows, std::int64_t vocab, at::ScalarType dtype, int seed) {
  at::manual_seed(seed);
  at::Tensor l = at::randn({rows, vocab}) * 3;
  if (rows > 2 && vocab > 7) {
    l[1][7] = 20.0;
    l[1][vocab - 1] = 20.0;  // a tie: the first index wins
    l[2][3] = 200.0;         // every other exp underflows: 1.0 exactly
  }
  return l.to(dtype);
}

void ExpectClose(const Picks& got, const Picks& want) {
  ASSERT_EQ(got.x0, want.x0);
  for (std::size_t r = 0; r < want.confidence.size(); ++r) {
    if (std::isnan(want.confidence[r])) {
      EXPECT_TRUE(std::isnan(got.confidence[r])) << "row " << r;
    } else {
      // The sums' orders differ: a few float64 roundings over up to 126k terms.
      EXPECT_NEAR(got.confidence[r], want.confidence[r], 1e-13 * std::abs(want.confidence[r])) << "row " << r;
    }
  }
}

void ExpectSameBits(const Picks& a, const Picks& b) {
  ASSERT_EQ(a.x0, b.x0);
  ASSERT_EQ(a.confidence.size(), b.confidence.size());
  for (std::size_t r = 0; r < a.confidence.size(); ++r)
    EXPECT_EQ(std::memcmp(&a.confidence[r], &b.confidence[r], sizeof(double)), 0)
        << "row " << r << ": " << a.confidence[r] << " vs " << b.confidence[r];
}

class GreedyRowsTest : public ::testing::TestWithParam<std::tuple<GemmPath, at::ScalarType>> {};

TEST_P(GreedyRowsTest, GivesAtensPickAndConfidence) {
  const auto [path, dtype] = GetParam();
  for (const std::int64_t vocab : {std::int64_t{1}, std::int64_t{15}, std::int64_t{4096}, std::int64_t{126464 + 3}}) {
    const at::Tensor l = Logits(5, vocab, dtype, static_cast<int>(vocab));
    const Picks got = RunLoop(path, l);
    if (!got.ran) {
      const bool should_run = path != GemmPath::kBlas && GemmPathRuns(path, HostCpuFeatures()) && ActivationLoopsBuilt();
      EXPECT_FALSE(should_run) << "a vector path that this CPU runs computed nothing";
      GTEST_SKIP() << "this CPU or build does not run the " << GemmPathName(path) << " loop";
    }
    ExpectClose(got, Aten(l));
    if (vocab > 7) { EXPECT_EQ(got.confidence[2], 1.0); }
  }
}

TEST_P(GreedyRowsTest, ExcludedIdsCountAsMinusInfinityInTheSoftmaxOnly) {
  const auto [path, dtype] = GetParam();
  if (!GreedyConfidenceRuns(path)) GTEST_SKIP() << GemmPathName(path) << " has no loop here";
  at::Tensor l = Logits(4, 4096, dtype, 9);
  l[0][100] = 30.0;  // the argmax is excluded: confidence 0
  l[1][5] = 30.0;    // an excluded id holds a large value that is not the argmax...
  l[1][6] = 31.0;
  l[2][17] = 31.0;   // ...or one just below the argmax, in another chunk
  l[2][5] = 30.5;
  const std::vector<std::int64_t> excluded = {100, 5};
  const Picks got = RunLoop(path, l, excluded);
  ASSERT_TRUE(got.ran);
  ExpectClose(got, Aten(l, excluded));
  EXPECT_EQ(got.x0[0], 100);
  EXPECT_EQ(got.confidence[0], 0.0);
}

TEST_P(GreedyRowsTest, NanAndInfiniteRowsAsAten) {
  const auto [path, dtype] = GetParam();
  if (!GreedyConfidenceRuns(path)) GTEST_SKIP() << GemmPathName(path) << " has no loop here";
  at::Tensor l = Logits(4, 100, dtype, 11);
  l[0][40] = std::numeric_limits<float>::quiet_NaN();  // argmax: the NaN; confidence NaN
  l[0][60] = std::numeric_limits<float>::quiet_NaN();
  l[1].fill_(-kInf);                                    // nothing finite: NaN, as softmax gives
  l[2][50] = std::numeric_limits<float>::quiet_NaN();  // a NaN at an excluded id: the argmax, confidence 0
  const Picks got = RunLoop(path, l, {50});
  ASSERT_TRUE(got.ran);
  ExpectClose(got, Aten(l, {50}));
  EXPECT_EQ(got.x0[0], 40);
  EXPECT_EQ(got.x0[2], 50);
  EXPECT_EQ(got.confidence[2], 0.0);
}

TEST_P(GreedyRowsTest, ARowGivesTheSameBitsWhateverTheRowsAround) {
  const auto [path, dtype] = GetParam();
  if (!GreedyConfidenceRuns(path)) GTEST_SKIP() << GemmPathName(path) << " has no loop here";
  const at::Tensor l = Logits(37, 5000, dtype, 13);
  const Picks all = RunLoop(path, l);
  for (std::int64_t r : {0, 17, 36}) {
    const Picks one = RunLoop(path, l.narrow(0, r, 1));
    EXPECT_EQ(one.x0[0], all.x0[r]);
    EXPECT_EQ(std::memcmp(&one.confidence[0], &all.confidence[r], sizeof(double)), 0) << "row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, GreedyRowsTest,
                         ::testing::Combine(::testing::Values(GemmPath::kAvx512, GemmPath::kAvx2, GemmPath::kBlas),
                                            ::testing::Values(at::kBFloat16, at::kFloat)));

// The two vector forms sum in the same order: the same bits, so a CPU's width does not change a pick.
TEST(GreedyRowsPathsTest, Avx512AndAvx2GiveTheSameBits) {
  UNMASK_SKIP_UNLESS_GEMM_PATH_RUNS(GemmPath::kAvx512);
  if (!GreedyConfidenceRuns(GemmPath::kAvx512)) GTEST_SKIP() << "this build has no SLEEF";
  for (const auto dtype : {at::kBFloat16, at::kFloat}) {
    const at::Tensor l = Logits(16, 126464, dtype, 17);
    ExpectSameBits(RunLoop(GemmPath::kAvx512, l, {0, 5}), RunLoop(GemmPath::kAvx2, l, {0, 5}));
  }
}

// The sampler's entry point: CPU float32/bf16 [rows, V] only; anything else is left to ATen.
TEST(GreedyConfidenceOnCpuTest, TakesWhatTheLoopRunsAndLeavesTheRest) {
  unmask::testing::ScopedGemmPath scoped(GemmPath::kAvx2);
  if (!scoped.ok() || !GreedyConfidenceRuns(GemmPath::kAvx2)) GTEST_SKIP() << "no AVX2 loop here";
  at::Tensor x0, conf;
  const at::Tensor l = Logits(3, 300, at::kFloat, 19);
  ASSERT_TRUE(sampler::GreedyConfidenceOnCpu(l, {}, &x0, &conf));
  EXPECT_EQ(x0.scalar_type(), at::kLong);
  EXPECT_EQ(conf.scalar_type(), at::kDouble);
  EXPECT_TRUE(x0.equal(l.argmax(-1)));
  EXPECT_FALSE(sampler::GreedyConfidenceOnCpu(l.to(at::kDouble), {}, &x0, &conf));
  EXPECT_FALSE(sampler::GreedyConfidenceOnCpu(l.unsqueeze(0), {}, &x0, &conf));
  unmask::testing::ScopedGemmPath blas(GemmPath::kBlas);
  EXPECT_FALSE(sampler::GreedyConfidenceOnCpu(l, {}, &x0, &conf));
}

}  // namespace
}  // namespace unmask::model
