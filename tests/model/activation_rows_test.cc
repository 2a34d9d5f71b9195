// activation_rows.h on every path, and SiluTimes (layers.h) over it: the bits of ATen's
// at::silu(gate) * up, for bf16 and float32, whatever the length, the path or the threads. And
// bf16_rows.h's RotateBf16 under ApplyRotaryRows and its RMSNorm passes under RmsNorm: the bits of
// the ATen compositions they replace.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/model/activation_rows.h"
#include "common/model/bf16_rows.h"
#include "common/model/layers.h"
#include "tests/fixtures/gemm_paths.h"

namespace unmask::model {
namespace {

// Activation-like values (normal, spread 4) with the edges mixed in: zeros of both signs, values
// where exp(-x) overflows or underflows, infinities.
at::Tensor Values(std::int64_t n, at::ScalarType dtype, unsigned seed) {
  std::vector<float> v = {0.0f, -0.0f, 88.5f, -88.5f, 104.0f, -104.0f, 1e-30f, -1e-30f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  while (static_cast<std::int64_t>(v.size()) < n) v.push_back(normal(rng));
  v.resize(static_cast<std::size_t>(n));
  std::shuffle(v.begin(), v.end(), rng);
  return at::tensor(v).to(dtype);
}

// ATen's own result, computed where each vector of its loop is a whole one: one thread (fewer
// elements than ATen's grain) and a length that is a multiple of 16. (ATen computes the elements
// past its last whole vector with std::exp, whose last bit can differ from SLEEF's.)
at::Tensor AtenSiluMul(const at::Tensor& g, const at::Tensor& u) {
  EXPECT_EQ(g.numel() % 16, 0);
  EXPECT_LT(g.numel(), 32768);
  return at::silu(g) * u;
}

// Equal bits, NaN for NaN (ATen's vector rounding writes 0xFFFF for a bf16 NaN, c10's scalar one 0x7FC0).
void ExpectSameBits(const at::Tensor& got, const at::Tensor& want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  const at::Tensor a = got.to(at::kFloat).contiguous().view(-1), b = want.to(at::kFloat).contiguous().view(-1);
  const float *pa = a.data_ptr<float>(), *pb = b.data_ptr<float>();
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    if (std::isnan(pb[i])) {
      ASSERT_TRUE(std::isnan(pa[i])) << "element " << i;
      continue;
    }
    ASSERT_EQ(std::memcmp(pa + i, pb + i, sizeof(float)), 0) << "element " << i << ": " << pa[i] << " vs " << pb[i];
  }
}

at::Tensor RunLoop(GemmPath path, const at::Tensor& g, const at::Tensor& u, bool* ran) {
  at::Tensor out = at::empty_like(g);
  if (g.scalar_type() == at::kFloat) {
    *ran = SiluMulF32(path, g.data_ptr<float>(), u.data_ptr<float>(), g.numel(), out.data_ptr<float>());
  } else {
    *ran = SiluMulBf16(path, static_cast<const std::uint16_t*>(g.data_ptr()),
                       static_cast<const std::uint16_t*>(u.data_ptr()), g.numel(),
                       static_cast<std::uint16_t*>(out.data_ptr()));
  }
  return out;
}

class ActivationRowsTest : public ::testing::TestWithParam<std::tuple<GemmPath, at::ScalarType>> {};

TEST_P(ActivationRowsTest, GivesAtenSiluTimesUp) {
  const auto [path, dtype] = GetParam();
  const at::Tensor g = Values(16 * 700, dtype, 1), u = Values(16 * 700, dtype, 2);
  bool ran = false;
  const at::Tensor out = RunLoop(path, g, u, &ran);
  ASSERT_EQ(ran, SiluMulRuns(path));
  if (!ran) {
    const bool should_run =
        path != GemmPath::kBlas && GemmPathRuns(path, HostCpuFeatures()) && ActivationLoopsBuilt();
    EXPECT_FALSE(should_run) << "a vector path that this CPU runs computed nothing";
    GTEST_SKIP() << "this CPU or build does not run the " << GemmPathName(path) << " loop";
  }
  ExpectSameBits(out, AtenSiluMul(g, u));
  // NaN in, NaN out.
  at::Tensor gn = g.clone();
  gn[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(RunLoop(path, gn, u, &ran)[5].item<float>()));
}

TEST_P(ActivationRowsTest, EveryLengthGivesTheBitsOfAWholeVector) {
  const auto [path, dtype] = GetParam();
  UNMASK_SKIP_UNLESS_GEMM_PATH_RUNS(path);
  if (!SiluMulRuns(path)) GTEST_SKIP() << GemmPathName(path) << " has no loop here (the BLAS path, or a build without SLEEF)";
  const at::Tensor g = Values(64, dtype, 3), u = Values(64, dtype, 4);
  bool ran = false;
  const at::Tensor whole = RunLoop(path, g, u, &ran);
  for (std::int64_t n = 1; n < 64; ++n) {
    for (std::int64_t start : {std::int64_t{0}, 64 - n}) {
      const at::Tensor part = RunLoop(path, g.narrow(0, start, n).contiguous(), u.narrow(0, start, n).contiguous(), &ran);
      ASSERT_TRUE(ran);
      ExpectSameBits(part, whole.narrow(0, start, n));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, ActivationRowsTest,
                         ::testing::Combine(::testing::Values(GemmPath::kAvx512, GemmPath::kAvx2, GemmPath::kBlas),
                                            ::testing::Values(at::kBFloat16, at::kFloat)));

// The two vector widths agree over a wide spread of values (SLEEF's expf at 16 and 8 lanes).
TEST(ActivationRowsPathsTest, Avx512AndAvx2GiveTheSameBits) {
  UNMASK_SKIP_UNLESS_GEMM_PATH_RUNS(GemmPath::kAvx512);
  if (!SiluMulRuns(GemmPath::kAvx512)) GTEST_SKIP() << "this build has no SLEEF";
  for (const auto dtype : {at::kBFloat16, at::kFloat}) {
    const at::Tensor g = Values(100003, dtype, 5) * 3, u = Values(100003, dtype, 6);
    bool a = false, b = false;
    const at::Tensor wide = RunLoop(GemmPath::kAvx512, g, u, &a), narrow = RunLoop(GemmPath::kAvx2, g, u, &b);
    ASSERT_TRUE(a && b);
    ExpectSameBits(wide, narrow);
  }
}

// SiluTimes: the same bits as ATen for a batch step's shape on the intra-op threads, and ATen's
// composition where the loop does not apply (strided input, float64, a path without the loop).
TEST(SiluTimesTest, GivesAtenBitsOnEveryPathAndShape) {
  for (const GemmPath path : {GemmPath::kAvx512, GemmPath::kAvx2, GemmPath::kBlas}) {
    unmask::testing::ScopedGemmPath scoped(path);
    if (!scoped.ok()) continue;
    for (const auto dtype : {at::kBFloat16, at::kFloat}) {
      // 211 rows of a 704-wide MLP, computed in pieces of ATen's size so that its loop has whole vectors.
      const at::Tensor g = Values(211 * 704, dtype, 7).view({211, 704}), u = Values(211 * 704, dtype, 8).view({211, 704});
      const at::Tensor got = SiluTimes(g, u);
      for (std::int64_t r = 0; r < 211; r += 16) {
        const std::int64_t rows = std::min<std::int64_t>(16, 211 - r);
        ExpectSameBits(got.narrow(0, r, rows), AtenSiluMul(g.narrow(0, r, rows), u.narrow(0, r, rows)));
      }
      const at::Tensor strided_g = g.t(), strided_u = u.t();
      ExpectSameBits(SiluTimes(strided_g, strided_u), at::silu(strided_g) * strided_u);
    }
    const at::Tensor h = Values(64, at::kDouble, 9), hu = Values(64, at::kDouble, 10);
    ExpectSameBits(SiluTimes(h, hu), at::silu(h) * hu);
  }
}

// ApplyRotaryRows on bf16 rows (bf16_rows.h's loop) against the composition it replaces, on every
// path, for head_dims that leave a tail after the vectors (40: half 20) and none (64, 128).
TEST(RotateBf16Test, GivesTheCompositionsBitsOnEveryPath) {
  for (const GemmPath path : {GemmPath::kAvx512, GemmPath::kAvx2, GemmPath::kBlas}) {
    unmask::testing::ScopedGemmPath scoped(path);
    if (!scoped.ok()) continue;
    for (const std::int64_t hd : {40, 64, 128}) {
      const RotaryTables tables = MakeRotaryTables(300, hd, 10000.0, at::kCPU);
      const at::Tensor positions = at::randint(0, 300, {37}, at::kLong);
      const at::Tensor cos = tables.cos.view({-1, hd}).index_select(0, positions).unsqueeze(1);
      const at::Tensor sin = tables.sin.view({-1, hd}).index_select(0, positions).unsqueeze(1);
      const at::Tensor x = (at::randn({37, 3, hd}) * 5).to(at::kBFloat16);
      const at::Tensor xf = x.to(at::kFloat);
      const at::Tensor rotated = at::cat({-xf.narrow(-1, hd / 2, hd / 2), xf.narrow(-1, 0, hd / 2)}, -1);
      const at::Tensor want = ((xf * cos) + (rotated * sin)).to(at::kBFloat16);
      ExpectSameBits(ApplyRotaryRows(x, cos, sin), want);
      std::vector<std::uint16_t> out(static_cast<std::size_t>(x.numel()));
      RotateBf16(path, static_cast<const std::uint16_t*>(x.data_ptr()), 37, 3, hd, cos.data_ptr<float>(),
                 sin.data_ptr<float>(), out.data());
      const at::Tensor direct = at::from_blob(out.data(), {x.numel()}, at::kShort).view(at::kBFloat16).view(x.sizes());
      ExpectSameBits(direct, want);
    }
  }
}

// RmsNorm on bf16 rows (bf16_rows.h's passes around ATen's mean) against the composition, on
// every path, with widths that leave a tail (40) and none (256), and rows of very different scales.
TEST(RmsNormBf16Test, GivesTheCompositionsBitsOnEveryPath) {
  for (const GemmPath path : {GemmPath::kAvx512, GemmPath::kAvx2, GemmPath::kBlas}) {
    unmask::testing::ScopedGemmPath scoped(path);
    if (!scoped.ok()) continue;
    for (const std::int64_t d : {40, 256}) {
      const at::Tensor x = (at::randn({211, d}) * at::logspace(-3, 3, 211).unsqueeze(1)).to(at::kBFloat16);
      const at::Tensor weight = (at::rand({d}) + 0.5).to(at::kBFloat16);
      const at::Tensor xf = x.to(at::kFloat);
      const at::Tensor want = weight * (xf * at::rsqrt(xf.pow(2).mean(-1, true) + 1e-5)).to(at::kBFloat16);
      ExpectSameBits(RmsNorm(x, weight, 1e-5), want);
      ExpectSameBits(RmsNorm(x.view({211, 1, d}), weight, 1e-5), want.view({211, 1, d}));
    }
  }
}

}  // namespace
}  // namespace unmask::model
