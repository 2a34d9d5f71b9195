// The fused elementwise kernels (common/model/fused_ops.h): they stand aside where they do not
// apply, and on a GPU they give the ATen composition's bits (layers.h), alone and in the model.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include "common/model/fused_ops.h"
#include "common/model/layers.h"
#include "common/model/llada_model.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::model {
namespace {

at::Tensor Bf16(at::IntArrayRef shape, const at::Device& device, double scale = 1.0) {
  return (at::randn(shape, at::kFloat) * scale).to(device, at::kBFloat16);
}

TEST(FusedOpsTest, StandAsideWhereTheyDoNotApply) {
  at::manual_seed(1);
  const at::Tensor x = Bf16({4, 2, 8}, at::kCPU), w = Bf16({8}, at::kCPU);
  const at::Tensor cos = at::randn({4, 1, 8}), sin = at::randn({4, 1, 8});
  EXPECT_FALSE(fused::RmsNorm(x, w, 1e-5).defined()) << "a CPU tensor";
  EXPECT_FALSE(fused::Rotary(x, cos, sin).defined());
  EXPECT_FALSE(fused::SiluMul(x, x).defined());
  EXPECT_FALSE(fused::RmsNorm(x.to(at::kFloat), w.to(at::kFloat), 1e-5).defined()) << "float32";
  // Dequantization: CPU tensors, and (where a GPU exists) shapes that do not fit, leave out alone.
  const at::Tensor out = at::full({4, 8}, 3.0f), q = at::zeros({4, 8}, at::kChar), scales = at::ones({4});
  EXPECT_FALSE(fused::DequantizeInt8(out, q, scales));
  EXPECT_FALSE(fused::DequantizeInt4(out, at::zeros({4, 4}, at::kByte), at::ones({4, 1}, at::kHalf), {}, 8));
  EXPECT_TRUE(at::equal(out, at::full({4, 8}, 3.0f)));
  if (fused::Available() && at::hasCUDA()) {
    const at::Device gpu(at::kCUDA, 0);
    const at::Tensor g = out.to(gpu);
    EXPECT_FALSE(fused::DequantizeInt8(g, q.to(gpu), at::ones({3}, gpu))) << "scales of another row count";
    EXPECT_FALSE(fused::DequantizeInt4(g, at::zeros({4, 3}, at::TensorOptions(at::kByte).device(gpu)),
                                       at::ones({4, 1}, at::TensorOptions(at::kHalf).device(gpu)), {}, 8))
        << "packed bytes of another width";
    EXPECT_FALSE(fused::DequantizeInt4(g, at::zeros({4, 4}, at::TensorOptions(at::kByte).device(gpu)),
                                       at::ones({4, 1}, at::TensorOptions(at::kHalf).device(gpu)), {}, 0))
        << "group 0";
    EXPECT_TRUE(at::equal(g.cpu(), at::full({4, 8}, 3.0f)));
  }
}

bool HaveGpuKernels() { return fused::Available() && at::hasCUDA(); }

// Many rows of random values at several scales (so that roundings land everywhere), odd row
// counts, and the shapes a layer uses: every element equal to the composition's.
TEST(FusedOpsTest, GiveTheAtenCompositionsBitsOnAGpu) {
  if (!HaveGpuKernels()) GTEST_SKIP() << "needs a GPU and a build with the CUDA kernels";
  const at::Device gpu(at::kCUDA, 0);
  at::manual_seed(7);
  for (double scale : {0.01, 1.0, 30.0}) {
    for (std::int64_t rows : {1, 33, 288}) {
      const at::Tensor x = Bf16({rows, 4096}, gpu, scale), w = Bf16({4096}, gpu);
      EXPECT_TRUE(at::equal(fused::RmsNorm(x, w, 1e-5), RmsNorm(x, w, 1e-5))) << "rms " << rows << " " << scale;
      const at::Tensor heads = Bf16({rows, 32, 128}, gpu, scale);
      const at::Tensor angles = at::rand({rows, 1, 128}, at::TensorOptions().device(gpu)) * 100;
      const at::Tensor cos = at::cos(angles), sin = at::sin(angles);
      EXPECT_TRUE(at::equal(fused::Rotary(heads, cos, sin), ApplyRotaryRows(heads, cos, sin)))
          << "rotary " << rows << " " << scale;
      const at::Tensor gate = Bf16({rows, 12288}, gpu, scale), up = Bf16({rows, 12288}, gpu, scale);
      EXPECT_TRUE(at::equal(fused::SiluMul(gate, up), at::silu(gate) * up)) << "silu " << rows << " " << scale;
    }
  }
}

// The tiny model on the GPU in bf16: the same logits with the fused kernels as without.
TEST(FusedOpsTest, TheModelGivesTheSameLogitsWithThemOnAGpu) {
  if (!HaveGpuKernels()) GTEST_SKIP() << "needs a GPU and a build with the CUDA kernels";
  ModelOptions plain, fused_on;
  plain.device = fused_on.device = "cuda";
  plain.precision = fused_on.precision = Precision::kBFloat16;
  fused_on.fused_kernels = true;
  auto a = LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), plain);
  auto b = LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), fused_on);
  ASSERT_TRUE(a.ok() && b.ok());
  const at::Tensor ids = at::arange(1000, 1040, at::kLong).view({1, 40}).to(at::kCUDA);
  EXPECT_TRUE(at::equal((*a)->Logits(ids, at::Tensor()), (*b)->Logits(ids, at::Tensor())));
}

}  // namespace
}  // namespace unmask::model
