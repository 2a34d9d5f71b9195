// The LLaDA network: precisions, grouped KV heads, attention chunking, padding, load errors.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "common/model/llada_model.h"
#include "common/model/small_gemm.h"
#include "tests/fixtures/temp_checkpoint.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::model {
namespace {

using ::testing::HasSubstr;

at::Tensor Ids(std::vector<std::int64_t> ids) {
  return at::from_blob(ids.data(), {1, static_cast<std::int64_t>(ids.size())}, at::kLong).clone();
}

TEST(LladaModelTest, Bf16AgreesWithFp32OnTheGoldenModel) {
  ModelOptions bf16;
  bf16.precision = Precision::kBFloat16;
  auto a = LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), ModelOptions{});
  auto b = LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), bf16);
  ASSERT_TRUE(a.ok() && b.ok());
  at::Tensor ids = Ids({75437, 40728, 28450, 18937, 48109, 126336, 126336, 126336});
  at::Tensor la = (*a)->Logits(ids, at::Tensor());
  at::Tensor lb = (*b)->Logits(ids, at::Tensor());
  EXPECT_EQ(lb.scalar_type(), at::kBFloat16);
  const double max_abs = (la - lb.to(at::kFloat)).abs().max().item<double>();
  EXPECT_LT(max_abs, 0.25) << "bf16 logits drifted from fp32";
  EXPECT_GT(max_abs, 0.0) << "bf16 path computed in fp32";
}

// A bf16 checkpoint computed in fp32 keeps its linear weights as bf16 views where a few-row
// kernel widens them in registers, and widens them once at load where only the BLAS runs (never
// at every product).
TEST(LladaModelTest, Bf16WeightsStayBf16OnlyWhereAKernelWidensThem) {
  const GemmPath before = ActiveGemmPath();
  ASSERT_TRUE(SetGemmPath(GemmPath::kBlas).ok());
  auto blas = LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), ModelOptions{});
  ASSERT_TRUE(blas.ok()) << blas.status().ToString();
  EXPECT_EQ((*blas)->weights().blocks[0].q_proj.weight().scalar_type(), at::kFloat);
  EXPECT_EQ((*blas)->weights().wte.weight().scalar_type(), at::kFloat);
  const GemmPath best = BestGemmPath(HostCpuFeatures());
  if (best != GemmPath::kBlas) {
    ASSERT_TRUE(SetGemmPath(best).ok());
    auto kernel = LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), ModelOptions{});
    ASSERT_TRUE(kernel.ok());
    EXPECT_EQ((*kernel)->weights().blocks[0].q_proj.weight().scalar_type(), at::kBFloat16);
    EXPECT_EQ((*kernel)->weights().wte.weight().scalar_type(), at::kBFloat16);
    const at::Tensor ids = at::arange(1000, 1016, at::kLong).view({1, 16});
    EXPECT_TRUE(at::allclose((*kernel)->Logits(ids, at::Tensor()), (*blas)->Logits(ids, at::Tensor()), 1e-4, 1e-4));
  }
  ASSERT_TRUE(SetGemmPath(before).ok());
}

TEST(LladaModelTest, QueryChunkedAttentionEqualsFullAttention) {
  ModelOptions chunked;
  chunked.attention_query_chunk = 3;
  auto a = LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), ModelOptions{});
  auto b = LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), chunked);
  ASSERT_TRUE(a.ok() && b.ok());
  at::Tensor ids = Ids({1, 2, 3, 4, 5, 6, 7, 126336, 126336, 126336});
  EXPECT_TRUE(at::allclose((*a)->Logits(ids, at::Tensor()), (*b)->Logits(ids, at::Tensor()), 1e-5, 1e-5));
}

TEST(LladaModelTest, AScopedChunkAppliesToThisThreadOnlyAndNests) {
  EXPECT_EQ(ScopedAttentionChunk::Effective(0), 0);
  {
    ScopedAttentionChunk job(64);
    EXPECT_EQ(ScopedAttentionChunk::Effective(0), 64);
    EXPECT_EQ(ScopedAttentionChunk::Effective(32), 32) << "the smaller chunk wins";
    EXPECT_EQ(ScopedAttentionChunk::Effective(128), 64);
    {
      ScopedAttentionChunk inner(16);
      EXPECT_EQ(ScopedAttentionChunk::Current(), 16);
      ScopedAttentionChunk none(0);
      EXPECT_EQ(ScopedAttentionChunk::Current(), 16) << "0 sets nothing";
    }
    EXPECT_EQ(ScopedAttentionChunk::Current(), 64);
    std::int64_t other_thread = -1;
    std::thread([&] { other_thread = ScopedAttentionChunk::Current(); }).join();
    EXPECT_EQ(other_thread, 0);
  }
  EXPECT_EQ(ScopedAttentionChunk::Current(), 0);

  auto m = LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), ModelOptions{});
  ASSERT_TRUE(m.ok());
  at::Tensor ids = Ids({1, 2, 3, 4, 5, 6, 7, 126336, 126336, 126336});
  at::Tensor full = (*m)->Logits(ids, at::Tensor());
  ScopedAttentionChunk chunked(3);
  EXPECT_TRUE(at::allclose(full, (*m)->Logits(ids, at::Tensor()), 1e-5, 1e-5));
}

TEST(LladaModelTest, GroupedKvHeadsEqualRepeatedFullHeads) {
  unmask::testing::TempDir dir;
  auto config = unmask::testing::SmallConfig();  // 4 heads, 2 KV heads
  unmask::testing::WriteRandomCheckpoint(dir.path(), config, 1);
  auto gqa = LladaModel::Load(dir.path(), ModelOptions{});
  ASSERT_TRUE(gqa.ok()) << gqa.status().ToString();

  // The same network with every KV head written out once per query head that uses it.
  LladaWeights full = (*gqa)->weights();
  const auto hd = config.head_dim();
  const auto group = config.n_heads / config.n_kv_heads;
  for (auto& blk : full.blocks) {
    auto expand = [&](const Linear& l) {
      return Linear(l.weight().view({config.n_kv_heads, hd, config.d_model}).repeat_interleave(group, 0)
                        .reshape({config.n_heads * hd, config.d_model}));
    };
    blk.k_proj = expand(blk.k_proj);
    blk.v_proj = expand(blk.v_proj);
  }
  auto full_config = config;
  full_config.n_kv_heads = config.n_heads;
  LladaModel mha(full_config, full, ModelOptions{}, at::kCPU);
  at::Tensor ids = Ids({1, 2, 3, 299, 299, 299});
  EXPECT_TRUE(at::allclose((*gqa)->Logits(ids, at::Tensor()), mha.Logits(ids, at::Tensor()), 1e-5, 1e-5));
}

TEST(LladaModelTest, PaddedKeysDoNotInfluenceRealPositions) {
  auto m = LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), ModelOptions{});
  ASSERT_TRUE(m.ok());
  at::Tensor mask = Ids({0, 0, 1, 1, 1, 1});
  at::Tensor a = (*m)->Logits(Ids({126081, 126081, 10, 11, 126336, 126336}), mask);
  at::Tensor b = (*m)->Logits(Ids({555, 777, 10, 11, 126336, 126336}), mask);
  EXPECT_TRUE(at::allclose(a.narrow(1, 2, 4), b.narrow(1, 2, 4), 1e-5, 1e-5));
  at::Tensor unmasked = (*m)->Logits(Ids({555, 777, 10, 11, 126336, 126336}), at::Tensor());
  EXPECT_FALSE(at::allclose(unmasked.narrow(1, 2, 4), b.narrow(1, 2, 4), 1e-5, 1e-5)) << "the mask had no effect";
}

TEST(LladaModelTest, TiedWeightsUseTheEmbeddingAsHead) {
  unmask::testing::TempDir dir;
  auto config = unmask::testing::SmallConfig();
  config.weight_tying = true;
  unmask::testing::WriteRandomCheckpoint(dir.path(), config, 1);
  auto m = LladaModel::Load(dir.path(), ModelOptions{});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE((*m)->weights().lm_head.weight().is_same((*m)->weights().wte.weight()));
}

TEST(LladaModelTest, LoadErrorsNameTheProblem) {
  auto missing = LladaModel::Load("/nonexistent/model", ModelOptions{});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/model/config.json"));

  ModelOptions gpu;
  gpu.device = "tpu:0";
  auto bad_device = LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), gpu);
  EXPECT_THAT(bad_device.status().message(), HasSubstr("device 'tpu:0'"));

  EXPECT_THAT(ParsePrecision("int3").status().message(), HasSubstr("precision 'int3' is not one of fp32, bf16, fp16"));
}

}  // namespace
}  // namespace unmask::model
