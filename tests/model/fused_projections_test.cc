// Each block's q/k/v and gate/up products joined into one product each (FuseBlockProjections,
// ModelOptions::fuse_projections): chosen where it is meant to be, and the same model either way.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/model/llada_model.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::model {
namespace {

using ::testing::HasSubstr;

TEST(FuseProjectionsTest, ParsesTheFlagAndNamesABadValue) {
  EXPECT_EQ(*ParseFusion("auto"), Fusion::kAuto);
  EXPECT_EQ(*ParseFusion("on"), Fusion::kOn);
  EXPECT_EQ(*ParseFusion("off"), Fusion::kOff);
  auto bad = ParseFusion("yes");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("'yes' is not one of auto, on, off"));
}

// auto joins only the model's own copies on a GPU: on the CPU (and over a loader's shared GPU
// copy) the weights stay where they are shared.
TEST(FuseProjectionsTest, AutoJoinsOnlyTheModelsOwnDeviceCopies) {
  EXPECT_TRUE(FuseProjections(Fusion::kAuto, /*own_device_copies=*/true));
  EXPECT_FALSE(FuseProjections(Fusion::kAuto, false));
  EXPECT_TRUE(FuseProjections(Fusion::kOn, false));
  EXPECT_FALSE(FuseProjections(Fusion::kOff, true));
  auto cpu = LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), ModelOptions{});
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  EXPECT_FALSE((*cpu)->weights().blocks[0].qkv_proj.defined());
  EXPECT_FALSE((*cpu)->weights().blocks[0].gate_up_proj.defined());
}

class FusedModelTest : public ::testing::TestWithParam<const char*> {};

// Joined, the layers are row views of the one weight, and the logits are the unjoined ones.
TEST_P(FusedModelTest, GivesTheLogitsOfTheSeparateProducts) {
  ModelOptions on, off;
  on.fuse_projections = Fusion::kOn;
  off.fuse_projections = Fusion::kOff;
  auto fused = LladaModel::Load(unmask::testing::TestDataPath(GetParam()), on);
  auto apart = LladaModel::Load(unmask::testing::TestDataPath(GetParam()), off);
  ASSERT_TRUE(fused.ok() && apart.ok()) << fused.status().ToString() << apart.status().ToString();
  for (std::size_t i = 0; i < (*fused)->weights().blocks.size(); ++i) {
    const LladaBlockWeights& f = (*fused)->weights().blocks[i];
    const LladaBlockWeights& a = (*apart)->weights().blocks[i];
    ASSERT_TRUE(f.qkv_proj.defined()) << "block " << i;
    EXPECT_FALSE(a.qkv_proj.defined());
    const at::Tensor joined = f.qkv_proj.weight();
    EXPECT_EQ(joined.size(0), a.q_proj.out_features() + 2 * a.k_proj.out_features());
    EXPECT_EQ(f.q_proj.weight().data_ptr(), joined.data_ptr()) << "q_proj is a view of the joined weight";
    EXPECT_TRUE(at::equal(f.v_proj.weight(), a.v_proj.weight()));
    EXPECT_EQ(f.qkv_bias.defined(), a.q_bias.defined());
    if (a.q_bias.defined()) EXPECT_TRUE(at::equal(f.k_bias, a.k_bias));
    EXPECT_EQ(f.gate_up_proj.defined(), f.moe.empty()) << "a MoE layer has no dense gate/up";
    if (f.gate_up_proj.defined()) EXPECT_TRUE(at::equal(f.up_proj.weight(), a.up_proj.weight()));
  }
  const std::int64_t mask = (*apart)->config().mask_token_id;
  const at::Tensor ids =
      at::tensor(std::vector<std::int64_t>{11, 12, 13, 14, 15, mask, mask, mask, mask, 16}, at::kLong).view({1, -1});
  const at::Tensor lf = (*fused)->Logits(ids, at::Tensor()), la = (*apart)->Logits(ids, at::Tensor());
  EXPECT_TRUE(at::allclose(lf, la, 1e-4, 1e-4)) << (lf - la).abs().max().item<double>();
}

// tiny-llada: dense LLaDA; tiny-dream: q/k/v biases; tiny-llada-moe: MoE layers only;
// tiny-llada2: a dense first layer, q/k/v stored as one tensor already, QK-norm.
INSTANTIATE_TEST_SUITE_P(Checkpoints, FusedModelTest,
                         ::testing::Values("tiny-llada", "tiny-dream", "tiny-llada-moe", "tiny-llada2"));

}  // namespace
}  // namespace unmask::model
