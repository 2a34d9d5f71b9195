// The few-row float32 kernel behind Linear: right against a float64 reference for every tile
// remainder (x-rows mod 6, W-rows mod 4, K mod 16), the same bits at any thread count, and used
// by Linear::Apply only where it may be (float32, no autograd).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/model/linear.h"
#include "common/model/small_gemm.h"

namespace unmask::model {
namespace {

class SmallGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!SmallGemmSupported()) GTEST_SKIP() << "this CPU has no AVX-512F; Linear uses the BLAS";
  }
  void TearDown() override { SetSmallGemmEnabled(true); }
};

// Checks y against float64 sums, within a float32 rounding bound for each element.
void ExpectMatchesFloat64(const at::Tensor& x, const at::Tensor& w, const at::Tensor& y) {
  const at::Tensor ref = at::matmul(x.to(at::kDouble), w.to(at::kDouble).t());
  const at::Tensor bound = at::matmul(x.abs().to(at::kDouble), w.abs().to(at::kDouble).t()) * (4 * x.size(1) * 6e-8) + 1e-30;
  const at::Tensor err = (y.to(at::kDouble) - ref).abs();
  EXPECT_TRUE((err <= bound).all().item<bool>()) << "max error " << err.max().item<double>() << ", shape " << x.sizes()
                                                 << " x " << w.sizes();
}

TEST_F(SmallGemmTest, MatchesFloat64SumsForEveryTileRemainder) {
  at::manual_seed(3);
  for (std::int64_t M : {1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 32, 96})
    for (std::int64_t K : {1, 15, 16, 17, 64, 100})
      for (std::int64_t N : {1, 3, 4, 5, 9, 37}) {
        const at::Tensor x = at::randn({M, K}), w = at::randn({N, K});
        at::Tensor y = at::empty({M, N});
        SmallGemmF32(x.data_ptr<float>(), M, K, w.data_ptr<float>(), N, y.data_ptr<float>(), N);
        ExpectMatchesFloat64(x, w, y);
      }
}

TEST_F(SmallGemmTest, WritesOnlyItsColumnsOfAWiderOutput) {
  at::manual_seed(4);
  const at::Tensor x = at::randn({7, 33}), w = at::randn({5, 33});
  at::Tensor y = at::full({7, 8}, -7.0f);
  SmallGemmF32(x.data_ptr<float>(), 7, 33, w.data_ptr<float>(), 5, y.data_ptr<float>(), 8);
  ExpectMatchesFloat64(x, w, y.narrow(1, 0, 5).contiguous());
  EXPECT_TRUE(y.narrow(1, 5, 3).eq(-7.0f).all().item<bool>());
}

TEST_F(SmallGemmTest, GivesTheSameBitsWhateverTheThreadCount) {
  at::manual_seed(5);
  const at::Tensor x = at::randn({32, 512}), w = at::randn({4099, 512});
  const int threads = at::get_num_threads();
  at::Tensor one = at::empty({32, 4099}), many = at::empty({32, 4099});
  at::set_num_threads(1);
  SmallGemmF32(x.data_ptr<float>(), 32, 512, w.data_ptr<float>(), 4099, one.data_ptr<float>(), 4099);
  at::set_num_threads(std::max(2, threads));
  SmallGemmF32(x.data_ptr<float>(), 32, 512, w.data_ptr<float>(), 4099, many.data_ptr<float>(), 4099);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(one, many));
  ExpectMatchesFloat64(x, w, one);
}

TEST_F(SmallGemmTest, LinearUsesItForFewFloat32RowsAndTheBlasOtherwise) {
  at::manual_seed(6);
  const at::Tensor w = at::randn({300, 64});
  const Linear layer(w);
  const at::Tensor x = at::randn({2, 9, 64});  // 18 rows, batch and sequence dimensions kept
  const at::Tensor kernel = layer.Apply(x);
  ASSERT_EQ(kernel.sizes(), (std::vector<std::int64_t>{2, 9, 300}));
  ExpectMatchesFloat64(x.view({18, 64}), w, kernel.view({18, 300}));
  at::Tensor direct = at::empty({18, 300});
  const at::Tensor xc = x.contiguous();
  SmallGemmF32(xc.data_ptr<float>(), 18, 64, w.data_ptr<float>(), 300, direct.data_ptr<float>(), 300);
  EXPECT_TRUE(at::equal(kernel.view({18, 300}), direct));

  SetSmallGemmEnabled(false);
  EXPECT_TRUE(at::equal(layer.Apply(x), at::linear(x, w)));
  SetSmallGemmEnabled(true);
  const at::Tensor many = at::randn({1000, 64});  // past the row limit: the BLAS
  EXPECT_TRUE(at::equal(layer.Apply(many), at::linear(many, w)));
  const at::Tensor x16 = x.to(at::kBFloat16);  // not float32: the BLAS
  EXPECT_TRUE(at::equal(Linear(w.to(at::kBFloat16)).Apply(x16), at::linear(x16, w.to(at::kBFloat16))));
}

TEST_F(SmallGemmTest, AutogradStillFlowsThroughLinear) {
  at::manual_seed(7);
  const at::Tensor w = at::randn({12, 16}).requires_grad_(true);
  const at::Tensor x = at::randn({3, 16});
  at::Tensor y = Linear(w).Apply(x);
  ASSERT_TRUE(y.requires_grad());
  y.sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_TRUE(at::allclose(w.grad(), x.sum(0).expand({12, 16})));
}

}  // namespace
}  // namespace unmask::model
