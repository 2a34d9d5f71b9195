// The few-row float32 kernels behind Linear, on both paths (AVX2, AVX-512) and for both stored
// W types (float32, bf16 bits): right against a float64 reference for every tile remainder
// (x-rows mod 6 and 4, W-rows mod 4 and 3, K mod 16 and 8), the same bits at any thread count,
// and used by Linear::Apply only where they may be (float32 x, no autograd, a path chosen).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "common/model/cpu_features.h"
#include "common/model/linear.h"
#include "common/model/small_gemm.h"
#include "common/model/threading.h"
#include "tests/fixtures/gemm_paths.h"

namespace unmask::model {
namespace {

// The flags `path` needs that this CPU lacks ("" where it runs).
std::string Missing(GemmPath path) {
  const CpuFeatures& cpu = HostCpuFeatures();
  std::string missing;
  if (path == GemmPath::kAvx512 && !cpu.avx512f) missing += " avx512f";
  if (path == GemmPath::kAvx2 && !cpu.avx2) missing += " avx2";
  if (path != GemmPath::kBlas && !cpu.fma) missing += " fma";
  return missing;
}

bool Runs(GemmPath path) { return GemmPathRuns(path, HostCpuFeatures()); }

// W as stored: float32, or bf16 (its float64 reference is the exact upcast of the bf16 values).
enum class WType { kF32, kBf16 };

// y = x w^T through the kernel for w's dtype.
void Kernel(GemmPath path, const at::Tensor& x, const at::Tensor& w, at::Tensor& y, std::int64_t ldy) {
  const std::int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  if (w.scalar_type() == at::kBFloat16) {
    SmallGemmBf16W(path, x.data_ptr<float>(), M, K, reinterpret_cast<const std::uint16_t*>(w.data_ptr<at::BFloat16>()),
                   N, y.data_ptr<float>(), ldy);
  } else {
    SmallGemmF32(path, x.data_ptr<float>(), M, K, w.data_ptr<float>(), N, y.data_ptr<float>(), ldy);
  }
}

// |y - x w^T| per element within a float32 rounding bound, `slack` times (2: two kernels' results
// against each other).
at::Tensor Bound(const at::Tensor& x, const at::Tensor& w, double slack = 1) {
  return at::matmul(x.abs().to(at::kDouble), w.abs().to(at::kDouble).t()) * (slack * 4 * x.size(1) * 6e-8) + 1e-30;
}

// Checks y against float64 sums, within a float32 rounding bound for each element.
void ExpectMatchesFloat64(const at::Tensor& x, const at::Tensor& w, const at::Tensor& y) {
  const at::Tensor ref = at::matmul(x.to(at::kDouble), w.to(at::kDouble).t());
  const at::Tensor err = (y.to(at::kDouble) - ref).abs();
  EXPECT_TRUE((err <= Bound(x, w)).all().item<bool>())
      << "max error " << err.max().item<double>() << ", shape " << x.sizes() << " x " << w.sizes();
}

class SmallGemmTest : public ::testing::TestWithParam<std::tuple<GemmPath, WType>> {
 protected:
  void SetUp() override {
    if (!Runs(path()))
      GTEST_SKIP() << "this CPU lacks" << Missing(path()) << ": no " << GemmPathName(path()) << " path";
    saved_ = ActiveGemmPath();
    ASSERT_TRUE(SetGemmPath(path()).ok());
  }
  void TearDown() override { ASSERT_TRUE(SetGemmPath(saved_).ok()); }

  GemmPath path() const { return std::get<0>(GetParam()); }
  // A random [rows, cols] W in the parameter's type.
  at::Tensor RandomW(std::int64_t rows, std::int64_t cols) const {
    at::Tensor w = at::randn({rows, cols});
    return std::get<1>(GetParam()) == WType::kBf16 ? w.to(at::kBFloat16) : w;
  }

  GemmPath saved_ = GemmPath::kBlas;
};

TEST_P(SmallGemmTest, MatchesFloat64SumsForEveryTileRemainder) {
  at::manual_seed(3);
  for (std::int64_t M : {1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 32, 96})
    for (std::int64_t K : {1, 7, 8, 9, 15, 16, 17, 23, 31, 64, 100})
      for (std::int64_t N : {1, 2, 3, 4, 5, 6, 9, 37}) {
        const at::Tensor x = at::randn({M, K}), w = RandomW(N, K);
        at::Tensor y = at::empty({M, N});
        Kernel(path(), x, w, y, N);
        ExpectMatchesFloat64(x, w, y);
      }
}

TEST_P(SmallGemmTest, WritesOnlyItsColumnsOfAWiderOutput) {
  at::manual_seed(4);
  const at::Tensor x = at::randn({7, 33}), w = RandomW(5, 33);
  at::Tensor y = at::full({7, 8}, -7.0f);
  Kernel(path(), x, w, y, 8);
  ExpectMatchesFloat64(x, w, y.narrow(1, 0, 5).contiguous());
  EXPECT_TRUE(y.narrow(1, 5, 3).eq(-7.0f).all().item<bool>());
}

TEST_P(SmallGemmTest, GivesTheSameBitsWhateverTheThreadCount) {
  at::manual_seed(5);
  const at::Tensor x = at::randn({32, 512}), w = RandomW(4099, 512);
  const int threads = at::get_num_threads();
  at::Tensor one = at::empty({32, 4099}), many = at::empty({32, 4099});
  at::set_num_threads(1);
  Kernel(path(), x, w, one, 4099);
  at::set_num_threads(std::max(2, threads));
  Kernel(path(), x, w, many, 4099);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(one, many));
  ExpectMatchesFloat64(x, w, one);
}

TEST_P(SmallGemmTest, LinearUsesItForFewFloat32RowsAndTheBlasOtherwise) {
  at::manual_seed(6);
  const at::Tensor w = RandomW(300, 64);
  const at::Tensor wf = w.to(at::kFloat);
  const Linear layer(w);
  const at::Tensor x = at::randn({2, 9, 64});  // 18 rows, batch and sequence dimensions kept
  const at::Tensor kernel = layer.Apply(x);
  ASSERT_EQ(kernel.scalar_type(), at::kFloat);
  ASSERT_EQ(kernel.sizes(), (std::vector<std::int64_t>{2, 9, 300}));
  ExpectMatchesFloat64(x.view({18, 64}), w, kernel.view({18, 300}));
  at::Tensor direct = at::empty({18, 300});
  Kernel(path(), x.view({18, 64}).contiguous(), w, direct, 300);
  EXPECT_TRUE(at::equal(kernel.view({18, 300}), direct));

  ASSERT_TRUE(SetGemmPath(GemmPath::kBlas).ok());
  EXPECT_TRUE(at::equal(layer.Apply(x), at::linear(x, wf)));
  ASSERT_TRUE(SetGemmPath(path()).ok());
  const at::Tensor many = at::randn({1000, 64});
  if (w.scalar_type() == at::kFloat && BlasHeldToOneThread()) {
    // Past the row limit a float32 W goes to the BLAS, here split by columns across the pool
    // (linear.cc): within float32 rounding of one whole call, not bitwise on every CPU.
    EXPECT_TRUE(at::allclose(layer.Apply(many), at::linear(many, wf), 1e-5, 1e-4));
  } else if (w.scalar_type() == at::kFloat) {  // past the row limit a float32 W goes to the BLAS
    EXPECT_TRUE(at::equal(layer.Apply(many), at::linear(many, wf)));
  } else {  // a bf16 W stays in the kernel, in chunks of rows: never widened whole
    at::Tensor chunked = at::empty({1000, 300});
    for (std::int64_t m = 0; m < 1000; m += 320) {
      const std::int64_t rows = std::min<std::int64_t>(320, 1000 - m);
      at::Tensor part = at::empty({rows, 300});
      Kernel(path(), many.narrow(0, m, rows).contiguous(), w, part, 300);
      chunked.narrow(0, m, rows).copy_(part);
    }
    EXPECT_TRUE(at::equal(layer.Apply(many), chunked));
    ExpectMatchesFloat64(many, wf, chunked);
  }
  // bf16 x and W: where the CPU multiplies bf16 pairs, the kernel with its sums rounded to bf16 as
  // stored, also past the row limit (in chunks); elsewhere the BLAS.
  const at::Tensor w16 = w.to(at::kBFloat16);
  for (const at::Tensor& x16 : {x.to(at::kBFloat16), many.to(at::kBFloat16)}) {
    const at::Tensor got = Linear(w16).Apply(x16);
    ASSERT_EQ(got.scalar_type(), at::kBFloat16);
    if (!SmallGemmBf16Native(path())) {
      EXPECT_TRUE(at::equal(got, at::linear(x16, w16)));
      continue;
    }
    const at::Tensor rows = x16.reshape({-1, 64});
    at::Tensor chunked = at::empty({rows.size(0), 300}, at::kBFloat16);
    for (std::int64_t m = 0; m < rows.size(0); m += 320) {
      const std::int64_t n = std::min<std::int64_t>(320, rows.size(0) - m);
      SmallGemmBf16Rounded(path(), reinterpret_cast<const std::uint16_t*>(rows.data_ptr<at::BFloat16>()) + m * 64, n, 64,
                           reinterpret_cast<const std::uint16_t*>(w16.data_ptr<at::BFloat16>()), 300,
                           reinterpret_cast<std::uint16_t*>(chunked.data_ptr<at::BFloat16>()) + m * 300, 300);
    }
    EXPECT_TRUE(at::equal(got.reshape({-1, 300}), chunked));
    EXPECT_TRUE(at::allclose(got.to(at::kFloat), at::linear(x16, w16).to(at::kFloat), 1e-2, 1e-2));
  }
}

TEST_P(SmallGemmTest, AutogradStillFlowsThroughLinear) {
  at::manual_seed(7);
  const at::Tensor w = RandomW(12, 16).requires_grad_(true);
  const at::Tensor x = at::randn({3, 16});
  at::Tensor y = Linear(w).Apply(x);
  ASSERT_TRUE(y.requires_grad());
  y.sum().backward();
  ASSERT_TRUE(w.grad().defined());
  const double tolerance = w.scalar_type() == at::kBFloat16 ? 1e-2 : 1e-5;  // the gradient is in W's type
  EXPECT_TRUE(at::allclose(w.grad().to(at::kFloat), x.sum(0).expand({12, 16}), tolerance, tolerance));
}

INSTANTIATE_TEST_SUITE_P(Paths, SmallGemmTest,
                         ::testing::Combine(::testing::Values(GemmPath::kAvx2, GemmPath::kAvx512),
                                            ::testing::Values(WType::kF32, WType::kBf16)),
                         [](const ::testing::TestParamInfo<SmallGemmTest::ParamType>& info) {
                           return std::string(GemmPathName(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) == WType::kBf16 ? "_bf16w" : "_f32w");
                         });

class GemmPathTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = ActiveGemmPath(); }
  void TearDown() override { ASSERT_TRUE(SetGemmPath(saved_).ok()); }
  GemmPath saved_ = GemmPath::kBlas;
};

TEST_F(GemmPathTest, RefusesAPathThisCpuCannotRun) {
  for (GemmPath path : {GemmPath::kBlas, GemmPath::kAvx2, GemmPath::kAvx512}) {
    const Status s = SetGemmPath(path);
    if (Runs(path)) {  // the refusal is only checkable on a CPU that lacks the flags
      EXPECT_TRUE(s.ok()) << GemmPathName(path) << ": " << s.ToString();
      EXPECT_EQ(ActiveGemmPath(), path);
    } else {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(s.message().find(GemmPathName(path)), std::string::npos) << s.message();
      EXPECT_NE(s.message().find(Missing(path).substr(1)), std::string::npos) << s.message();
      EXPECT_NE(ActiveGemmPath(), path);
    }
  }
  EXPECT_TRUE(SetGemmPath(GemmPath::kBlas).ok());  // always
}

TEST_F(GemmPathTest, Bf16WGivesTheBitsOfItsFloat32Upcast) {
  at::manual_seed(8);
  const at::Tensor x = at::randn({13, 70}), w = at::randn({11, 70}).to(at::kBFloat16);
  for (GemmPath path : {GemmPath::kAvx2, GemmPath::kAvx512}) {
    if (!Runs(path)) continue;
    at::Tensor wide = at::empty({13, 11}), narrow = at::empty({13, 11});
    Kernel(path, x, w.to(at::kFloat), wide, 11);
    Kernel(path, x, w, narrow, 11);
    EXPECT_TRUE(at::equal(wide, narrow)) << GemmPathName(path);
  }
}

TEST_F(GemmPathTest, Avx2AndAvx512AgreeWithinTheFloat32Bound) {
  for (GemmPath path : {GemmPath::kAvx2, GemmPath::kAvx512})
    if (!Runs(path)) GTEST_SKIP() << "this CPU lacks" << Missing(path) << ": no " << GemmPathName(path) << " path";
  at::manual_seed(9);
  for (std::int64_t K : {7, 64, 100, 512}) {
    const at::Tensor x = at::randn({13, K}), w = at::randn({37, K}), w16 = w.to(at::kBFloat16);
    for (const at::Tensor& wt : {w, w16}) {
      at::Tensor a = at::empty({13, 37}), b = at::empty({13, 37});
      Kernel(GemmPath::kAvx2, x, wt, a, 37);
      Kernel(GemmPath::kAvx512, x, wt, b, 37);
      const at::Tensor diff = (a.to(at::kDouble) - b.to(at::kDouble)).abs();
      EXPECT_TRUE((diff <= Bound(x, wt, 2)).all().item<bool>())
          << "K " << K << " " << wt.scalar_type() << ": max difference " << diff.max().item<double>();
    }
  }
}

TEST_F(GemmPathTest, LinearWithABf16WeightAndFloat32InputComputesInFloat32OnEveryPath) {
  at::manual_seed(10);
  const at::Tensor w = at::randn({300, 64}).to(at::kBFloat16);
  const Linear layer(w);
  for (GemmPath path : {GemmPath::kBlas, GemmPath::kAvx2, GemmPath::kAvx512}) {
    if (!Runs(path)) continue;
    ASSERT_TRUE(SetGemmPath(path).ok());
    for (std::int64_t rows : {1, 18, 1000}) {  // 1000: past the kernels' row limit
      const at::Tensor x = at::randn({rows, 64});
      const at::Tensor y = layer.Apply(x);
      ASSERT_EQ(y.scalar_type(), at::kFloat) << GemmPathName(path);
      const at::Tensor ref = at::linear(x, w.to(at::kFloat));
      EXPECT_TRUE(((y - ref).abs() <= Bound(x, w).to(at::kFloat) * 2).all().item<bool>())
          << GemmPathName(path) << ", " << rows << " rows: max difference " << (y - ref).abs().max().item<float>();
    }
  }
}

// bf16 x and W (bf16 compute's products): within the float32 bound of the float64 sums of the
// bf16 values, for every tile remainder and K mod 32 (vdpbf16ps's step), each row's bits the same
// whatever rows surround it; where the CPU has AVX512_BF16, the native kernel is the one that runs.
TEST_F(GemmPathTest, Bf16XAndWSumInFloat32AndARowIsTheSameAloneOnEveryPath) {
  at::manual_seed(12);
  for (GemmPath path : {GemmPath::kAvx2, GemmPath::kAvx512}) {
    if (!Runs(path)) continue;
    const CpuFeatures& cpu = HostCpuFeatures();
    EXPECT_EQ(SmallGemmBf16Native(path), path == GemmPath::kAvx512 && cpu.avx512bw && cpu.avx512_bf16);
    for (std::int64_t K : {5, 31, 32, 70, 256}) {
      for (std::int64_t M : {1, 7, 13}) {
        const at::Tensor x = at::randn({M, K}).to(at::kBFloat16), w = at::randn({11, K}).to(at::kBFloat16);
        at::Tensor y = at::empty({M, 11});
        const auto* xb = reinterpret_cast<const std::uint16_t*>(x.data_ptr<at::BFloat16>());
        const auto* wb = reinterpret_cast<const std::uint16_t*>(w.data_ptr<at::BFloat16>());
        SmallGemmBf16(path, xb, M, K, wb, 11, y.data_ptr<float>(), 11);
        ExpectMatchesFloat64(x.to(at::kFloat), w.to(at::kFloat), y);
        for (const std::int64_t row : {std::int64_t{0}, M - 1}) {
          at::Tensor alone = at::empty({1, 11});
          SmallGemmBf16(path, xb + row * K, 1, K, wb, 11, alone.data_ptr<float>(), 11);
          EXPECT_TRUE(at::equal(alone, y.narrow(0, row, 1))) << GemmPathName(path) << " K " << K << " M " << M << " row " << row;
        }
      }
    }
  }
}

// bf16 x and W with the sums rounded as stored: SmallGemmBf16's float32 sums, each rounded as
// c10::BFloat16 rounds, into the columns of a wider output it is given and nowhere else, a row the
// same alone; refused where the CPU has no bf16 pairs.
TEST_F(GemmPathTest, Bf16RoundedIsTheFloat32SumsRoundedAsC10Rounds) {
  at::manual_seed(14);
  for (GemmPath path : {GemmPath::kBlas, GemmPath::kAvx2, GemmPath::kAvx512}) {
    const auto x = at::randn({13, 70}).to(at::kBFloat16), w = at::randn({11, 70}).to(at::kBFloat16);
    const auto* xb = reinterpret_cast<const std::uint16_t*>(x.data_ptr<at::BFloat16>());
    const auto* wb = reinterpret_cast<const std::uint16_t*>(w.data_ptr<at::BFloat16>());
    if (!SmallGemmBf16Native(path)) {
      std::vector<std::uint16_t> y(13 * 11);
      EXPECT_THROW(SmallGemmBf16Rounded(path, xb, 13, 70, wb, 11, y.data(), 11), std::invalid_argument)
          << GemmPathName(path);
      continue;
    }
    for (std::int64_t K : {5, 31, 32, 70, 256}) {
      for (std::int64_t M : {1, 7, 13}) {
        const at::Tensor xk = at::randn({M, K}).to(at::kBFloat16), wk = at::randn({11, K}).to(at::kBFloat16);
        const auto* xp = reinterpret_cast<const std::uint16_t*>(xk.data_ptr<at::BFloat16>());
        const auto* wp = reinterpret_cast<const std::uint16_t*>(wk.data_ptr<at::BFloat16>());
        at::Tensor sums = at::empty({M, 11});
        SmallGemmBf16(path, xp, M, K, wp, 11, sums.data_ptr<float>(), 11);
        at::Tensor wide = at::full({M, 14}, 7.0, at::kBFloat16);  // 3 columns past the output, untouched
        auto* yp = reinterpret_cast<std::uint16_t*>(wide.data_ptr<at::BFloat16>());
        SmallGemmBf16Rounded(path, xp, M, K, wp, 11, yp, 14);
        EXPECT_TRUE(at::equal(wide.narrow(1, 0, 11), sums.to(at::kBFloat16))) << "K " << K << " M " << M;
        EXPECT_TRUE(at::equal(wide.narrow(1, 11, 3), at::full({M, 3}, 7.0, at::kBFloat16)));
        at::Tensor alone = at::empty({1, 11}, at::kBFloat16);
        SmallGemmBf16Rounded(path, xp + (M - 1) * K, 1, K, wp, 11, reinterpret_cast<std::uint16_t*>(alone.data_ptr<at::BFloat16>()), 11);
        EXPECT_TRUE(at::equal(alone, wide.narrow(0, M - 1, 1).narrow(1, 0, 11))) << "K " << K << " M " << M;
      }
    }
  }
}

// A wide bf16 layer (K = 8192: 64 rows to a kernel call in Linear) over 150 rows: the bits of one
// call over all of them, every chunk's rows in place.
TEST_F(GemmPathTest, AWideBf16LayerInChunksGivesTheBitsOfOneCall) {
  if (!SmallGemmBf16Native(GemmPath::kAvx512)) GTEST_SKIP() << "this CPU has no bf16 pairs (AVX512_BF16)";
  unmask::testing::ScopedGemmPath scoped(GemmPath::kAvx512);
  ASSERT_TRUE(scoped.ok());
  at::manual_seed(15);
  const at::Tensor x = at::randn({150, 8192}).to(at::kBFloat16), w = at::randn({9, 8192}).to(at::kBFloat16);
  at::Tensor whole = at::empty({150, 9}, at::kBFloat16);
  SmallGemmBf16Rounded(GemmPath::kAvx512, reinterpret_cast<const std::uint16_t*>(x.data_ptr<at::BFloat16>()), 150, 8192,
                       reinterpret_cast<const std::uint16_t*>(w.data_ptr<at::BFloat16>()), 9,
                       reinterpret_cast<std::uint16_t*>(whole.data_ptr<at::BFloat16>()), 9);
  EXPECT_TRUE(at::equal(Linear(w).Apply(x), whole));
}

// A row's bits are the same whichever tile it falls into: row 0 of 13 is in a full tile (6 x-rows by
// 4 W-rows, its sums reduced 16 accumulators at a time), alone it is in a 1-row tile (the W-rows
// left over after the 4-row tiles are reduced one accumulator at a time).
TEST_F(GemmPathTest, ARowAloneGetsTheBitsItGetsInAFullTile) {
  at::manual_seed(13);
  for (GemmPath path : {GemmPath::kAvx2, GemmPath::kAvx512}) {
    if (!Runs(path)) continue;
    for (std::int64_t K : {16, 70, 256, 512}) {
      const at::Tensor x = at::randn({13, K}), w = at::randn({11, K}), w16 = w.to(at::kBFloat16);
      for (const at::Tensor& wt : {w, w16}) {
        at::Tensor all = at::empty({13, 11}), alone = at::empty({1, 11});
        Kernel(path, x, wt, all, 11);
        Kernel(path, x.narrow(0, 0, 1), wt, alone, 11);
        EXPECT_TRUE(at::equal(alone, all.narrow(0, 0, 1))) << GemmPathName(path) << " K " << K << " " << wt.scalar_type();
      }
    }
  }
}

}  // namespace
}  // namespace unmask::model
