// The MoE forward's pieces on the tiny LLaDA-MoE / LLaDA2 checkpoints: the routers on hand-made
// scores, routed-only experts against every expert computed densely and against the official loop
// (bit for bit, on one thread and on two), packed segments against each
// alone, LLaDA2's block-causal attention (with and without a cache), and load errors that name the
// missing tensor.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/model/llada_model.h"
#include "common/model/moe.h"
#include "common/registry/progressive_loader.h"
#include "common/segment/weight_view.h"
#include "tests/fixtures/gemm_paths.h"
#include "tests/fixtures/segment_model.h"
#include "tests/fixtures/temp_checkpoint.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::model {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<LladaModel> LoadTiny(const std::string& name) {
  auto model = LladaModel::Load(unmask::testing::TestDataPath(name), ModelOptions{});
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(*model) : nullptr;
}

at::Tensor Row(std::vector<float> v) { return at::tensor(v).view({1, -1}); }

std::vector<std::int64_t> Sorted(const at::Tensor& t) {
  std::vector<std::int64_t> v(t.data_ptr<std::int64_t>(), t.data_ptr<std::int64_t>() + t.numel());
  std::sort(v.begin(), v.end());
  return v;
}

TEST(MoeRouteTest, SoftmaxRouterAddsTheBiasToTheWeightsAndDoesNotRenormalise) {
  const at::Tensor logits = Row({0.0f, 1.0f, 2.0f, 3.0f});
  const at::Tensor p = at::softmax(logits, -1);
  Routing plain = RouteSoftmax(logits, at::Tensor(), 2);
  EXPECT_EQ(Sorted(plain.experts), (std::vector<std::int64_t>{2, 3}));
  EXPECT_NEAR(plain.weights[0][0].item<float>(), p[0][3].item<float>(), 1e-7);
  // A bias large enough to change the choice: expert 0 wins, with its biased value as weight.
  Routing biased = RouteSoftmax(logits, at::tensor({1.0f, 0.0f, 0.0f, 0.0f}), 2);
  EXPECT_EQ(biased.experts[0][0].item<std::int64_t>(), 0);
  EXPECT_NEAR(biased.weights[0][0].item<float>(), p[0][0].item<float>() + 1.0f, 1e-6);
}

TEST(MoeRouteTest, GroupLimitedRouterKeepsOnlyTheBestGroupsAndScalesTheWeights) {
  checkpoint::MoeConfig moe;
  moe.num_experts = 8;
  moe.top_k = 2;
  moe.n_group = 4;  // groups {0,1} {2,3} {4,5} {6,7}
  moe.topk_group = 1;
  moe.routed_scaling_factor = 2.5;
  // Group {6,7} has the best pair sum although expert 0 alone scores highest: the group rule wins.
  const at::Tensor logits = Row({5.0f, -5.0f, 0.0f, 0.0f, 0.0f, 0.0f, 2.0f, 2.0f});
  Routing r = RouteSigmoidGrouped(logits, at::Tensor(), moe);
  EXPECT_EQ(Sorted(r.experts), (std::vector<std::int64_t>{6, 7}));
  EXPECT_NEAR(r.weights.sum().item<float>(), 2.5f, 1e-5) << "renormalised, then scaled";
  // The bias chooses but does not weigh: expert 5 is chosen with its unbiased sigmoid.
  moe.topk_group = 4;
  Routing b = RouteSigmoidGrouped(logits, at::tensor({0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 9.0f, 0.0f, 0.0f}), moe);
  EXPECT_EQ(Sorted(b.experts), (std::vector<std::int64_t>{0, 5}));
  const float s0 = 1.0f / (1.0f + std::exp(-5.0f)), s5 = 0.5f;
  EXPECT_NEAR(b.weights.sum().item<float>(), 2.5f, 1e-5);
  for (int j = 0; j < 2; ++j) {
    const float expected = 2.5f * (b.experts[0][j].item<std::int64_t>() == 0 ? s0 : s5) / (s0 + s5);
    EXPECT_NEAR(b.weights[0][j].item<float>(), expected, 1e-5);
  }
}

// Every expert on every row, mixed by the same routing: what the routed-only block must equal.
at::Tensor DenseAllExperts(const checkpoint::LladaConfig& c, const MoeWeights& w, const at::Tensor& h) {
  const Routing r = Route(c, w, h);
  std::vector<at::Tensor> all;
  for (const auto& expert : w.experts) all.push_back(expert.Apply(h));
  const at::Tensor stacked = at::stack(all, 1);  // [N, E, d]
  const at::Tensor mixing = at::zeros({h.size(0), c.moe.num_experts}).scatter_(1, r.experts, r.weights);
  at::Tensor y = (stacked * mixing.unsqueeze(-1)).sum(1);
  if (w.has_shared) y = y + w.shared.Apply(h);
  return y;
}

TEST(MoeForwardTest, RoutedExpertsEqualEveryExpertComputedDensely) {
  for (const char* name : {"tiny-llada-moe-gqa", "tiny-llada2-grouped"}) {
    auto model = LoadTiny(name);
    ASSERT_TRUE(model);
    const auto& c = model->config();
    for (std::size_t layer = 0; layer < model->weights().blocks.size(); ++layer) {
      const MoeWeights& w = model->weights().blocks[layer].moe;
      at::manual_seed(static_cast<std::uint64_t>(layer));
      if (w.empty()) continue;
      const at::Tensor h = at::randn({37, c.d_model}, at::TensorOptions().dtype(at::kFloat));
      EXPECT_TRUE(at::allclose(MoeForward(c, w, h, 0), DenseAllExperts(c, w, h), 1e-5, 1e-5))
          << name << " layer " << layer;
    }
  }
}

// The official modeling code's loop, in ATen operators: each expert once over the rows that chose
// it, mixed by index_add_ expert after expert (LLaDA-MoE), or put back in slot order and summed
// over the choices in float32 (LLaDA2). The CPU path (moe_cpu.h) must give these bits in float32.
at::Tensor OfficialLoop(const checkpoint::LladaConfig& c, const MoeWeights& w, const at::Tensor& h) {
  const Routing r = Route(c, w, h);
  const std::int64_t n = h.size(0), k = r.experts.size(1);
  const bool llada2 = c.architecture == checkpoint::Architecture::kLlada2Moe;
  const at::Tensor flat = r.experts.reshape({-1});
  at::Tensor y = at::zeros_like(h), by_slot = at::zeros({n * k, h.size(1)}, h.options());
  for (std::int64_t e = 0; e < c.moe.num_experts; ++e) {
    const at::Tensor slots = (flat == e).nonzero().squeeze(1);
    if (slots.numel() == 0) continue;
    const at::Tensor rows = at::div(slots, k, "floor");
    const at::Tensor out = w.experts[static_cast<std::size_t>(e)].Apply(h.index_select(0, rows));
    if (llada2) {
      by_slot.index_copy_(0, slots, out);
    } else {
      y.index_add_(0, rows, out * r.weights.reshape({-1}).index_select(0, slots).to(h.scalar_type()).unsqueeze(1));
    }
  }
  if (llada2) y = (by_slot.view({n, k, -1}).to(at::kFloat) * r.weights.unsqueeze(-1)).sum(1).to(h.scalar_type());
  if (w.has_shared) y = y + w.shared.Apply(h);
  return y;
}

// Runs f with the intra-op pool held to `threads`, then restores it.
template <typename F>
auto WithThreads(int threads, F f) {
  const int before = at::get_num_threads();
  at::set_num_threads(threads);
  auto result = f();
  at::set_num_threads(before);
  return result;
}

// Experts spread over two threads or run on one give the same bits; in float32 the official loop's
// bits, in bf16 the official loop's within bf16 rounding (the few-row kernels sum bf16 products
// in another order than the BLAS). 5 rows: a row or two per expert; 200: dozens.
TEST(MoeForwardTest, ThreadedExpertsGiveTheOfficialBitsOnAnyThreadCount) {
  for (const char* name : {"tiny-llada-moe-gqa", "tiny-llada2-grouped"}) {
    for (const Precision precision : {Precision::kFloat32, Precision::kBFloat16}) {
      ModelOptions options;
      options.precision = precision;
      auto model = LladaModel::Load(unmask::testing::TestDataPath(name), options);
      ASSERT_TRUE(model.ok()) << model.status().ToString();
      const auto& c = (*model)->config();
      const MoeWeights& w = (*model)->weights().blocks.back().moe;
      ASSERT_FALSE(w.empty()) << name;
      for (const std::int64_t rows : {5, 200}) {
        at::manual_seed(static_cast<std::uint64_t>(rows));
        const at::Tensor h = at::randn({rows, c.d_model}).to(precision == Precision::kFloat32 ? at::kFloat : at::kBFloat16);
        const at::Tensor one = WithThreads(1, [&] { return MoeForward(c, w, h, 0); });
        const at::Tensor two = WithThreads(2, [&] { return MoeForward(c, w, h, 0); });
        EXPECT_TRUE(at::equal(one, two)) << name << " rows " << rows;
        const at::Tensor official = OfficialLoop(c, w, h);
        if (precision == Precision::kFloat32) {
          EXPECT_TRUE(at::equal(two, official)) << name << " rows " << rows;
        } else {
          EXPECT_TRUE(at::allclose(two.to(at::kFloat), official.to(at::kFloat), 2e-2, 2e-2)) << name << " rows " << rows;
        }
      }
    }
  }
}

// A row's output does not depend on which other rows share its experts: each row alone gives the
// bits it gets among 200 (what keeps LLaDA2's cached and uncached passes on the same ids), on both
// few-row kernel paths, in float32 and in bf16. (Not on the BLAS path: OpenBLAS multiplies one row
// with another kernel than many, so a float32 row alone differs in its last bits there.)
TEST(MoeForwardTest, ARowAloneGetsTheBitsItGetsInABatch) {
  for (const GemmPath path : {GemmPath::kAvx2, GemmPath::kAvx512}) {
    if (!GemmPathRuns(path, HostCpuFeatures())) continue;
    unmask::testing::ScopedGemmPath scoped(path);
    ASSERT_TRUE(scoped.ok());
    for (const Precision precision : {Precision::kFloat32, Precision::kBFloat16}) {
      ModelOptions options;
      options.precision = precision;
      auto model = LladaModel::Load(unmask::testing::TestDataPath("tiny-llada-moe-gqa"), options);
      ASSERT_TRUE(model.ok()) << model.status().ToString();
      const auto& c = (*model)->config();
      const MoeWeights& w = (*model)->weights().blocks.back().moe;
      at::manual_seed(11);
      const at::Tensor h = at::randn({200, c.d_model}).to(precision == Precision::kFloat32 ? at::kFloat : at::kBFloat16);
      const at::Tensor all = MoeForward(c, w, h, 0);
      for (const std::int64_t row : {0, 77, 199}) {
        EXPECT_TRUE(at::equal(MoeForward(c, w, h.narrow(0, row, 1), 0), all.narrow(0, row, 1)))
            << GemmPathName(path) << " " << (precision == Precision::kFloat32 ? "fp32" : "bf16") << " row " << row;
      }
    }
  }
}

TEST(MoeForwardTest, PackedSegmentsEqualEachAlone) {
  for (const char* name : {"tiny-llada-moe-gqa", "tiny-llada2"}) {
    auto model = LoadTiny(name);
    ASSERT_TRUE(model);
    const std::int64_t block = model->config().fused_qkv() ? 4 : 0;
    at::manual_seed(3);
    PackedSegment a, b;
    a.ids = at::randint(0, 500, {1, 11}, at::kLong);
    b.ids = at::randint(0, 500, {2, 6}, at::kLong);
    a.causal_block = b.causal_block = block;
    const auto packed = model->HiddenPacked({a, b});
    EXPECT_TRUE(at::allclose(packed[0], model->HiddenPacked({a})[0], 1e-5, 1e-5)) << name;
    EXPECT_TRUE(at::allclose(packed[1], model->HiddenPacked({b})[0], 1e-5, 1e-5)) << name;
  }
}

TEST(MoeForwardTest, BlockCausalQueriesSeeOnlyTheirBlockAndEarlierOnes) {
  auto model = LoadTiny("tiny-llada2");
  ASSERT_TRUE(model);
  at::manual_seed(5);
  PackedSegment seg;
  seg.ids = at::randint(0, 500, {1, 12}, at::kLong);
  seg.causal_block = 4;
  const at::Tensor before = model->HiddenPacked({seg})[0];
  seg.ids = seg.ids.clone();
  seg.ids[0][9] = (seg.ids[0][9].item<std::int64_t>() + 1) % 500;  // a token of block 2
  const at::Tensor after = model->HiddenPacked({seg})[0];
  EXPECT_TRUE(at::allclose(before.narrow(1, 0, 8), after.narrow(1, 0, 8), 1e-5, 1e-5)) << "blocks 0-1 saw block 2";
  EXPECT_FALSE(at::allclose(before.narrow(1, 8, 4), after.narrow(1, 8, 4), 1e-4, 1e-4));
  seg.causal_block = 0;  // bidirectional: every position sees the change
  EXPECT_FALSE(at::allclose(before.narrow(1, 0, 8), model->HiddenPacked({seg})[0].narrow(1, 0, 8), 1e-4, 1e-4));
}

// The exact cache LLaDA2's sampler relies on: the K/V of finished blocks, computed block-causally,
// give the block being denoised what the whole window gives it.
TEST(MoeForwardTest, BlockCausalSegmentOverACacheEqualsTheWholeWindow) {
  auto model = LoadTiny("tiny-llada2");
  ASSERT_TRUE(model);
  at::manual_seed(9);
  KvCache cache;
  PackedSegment whole;
  whole.ids = at::randint(0, 500, {1, 12}, at::kLong);
  whole.causal_block = 4;
  whole.cache = &cache;
  const at::Tensor full = model->HiddenPacked({whole})[0];
  PackedSegment last;
  last.ids = whole.ids.narrow(1, 8, 4);
  last.whole = false;
  last.offset = 8;
  last.cache = &cache;
  last.causal_block = 4;
  EXPECT_TRUE(at::allclose(model->HiddenPacked({last})[0], full.narrow(1, 8, 4), 1e-5, 1e-5));
}

// The checkpoint streamed into a fresh shared segment at `precision`, and the model built over it
// as an executor builds it.
using unmask::testing::ModelOverSegment;

// Logits [T, V] of one segment, and per layer the experts each row chose (sorted).
struct RoutedLogits {
  at::Tensor logits;
  std::vector<at::Tensor> experts;
};

RoutedLogits RunRouted(const LladaModel& model, const PackedSegment& seg) {
  RoutedLogits out;
  ScopedRoutingObserver observer(
      [&](std::int64_t, const Routing& r) { out.experts.push_back(std::get<0>(r.experts.sort(-1))); });
  out.logits = model.HeadLogits(model.HiddenPacked({seg})[0])[0];
  return out;
}

// The loader's path: 16-bit segments give the checkpoint's logits; int8 quantizes every expert and
// stays close. int8 noise can flip a near-tie in a router, which changes that row by a whole
// expert: rows are compared where every layer chose the same experts. (A flip before the last
// layer would reach other rows through attention; none happens on these inputs, as asserted.)
TEST(MoeForwardTest, SegmentsServeTheMoeModels) {
  for (const std::string name : {"tiny-llada-moe-gqa", "tiny-llada2-grouped"}) {
    auto direct = LoadTiny(name);
    ASSERT_TRUE(direct);
    PackedSegment seg;
    seg.ids = at::arange(100, 112, at::kLong).view({1, 12});
    seg.causal_block = direct->config().fused_qkv() ? 4 : 0;
    const RoutedLogits reference = RunRouted(*direct, seg);
    auto bf16 = ModelOverSegment(name, "bf16");
    ASSERT_TRUE(bf16.ok()) << name << ": " << bf16.status().ToString();
    EXPECT_EQ((*bf16)->config().mask_token_id, 504) << "the segment's config carries the tokenizer's ids";
    EXPECT_TRUE(at::allclose(RunRouted(**bf16, seg).logits, reference.logits, 1e-5, 1e-5)) << name;

    auto int8 = ModelOverSegment(name, "int8");
    ASSERT_TRUE(int8.ok()) << name << ": " << int8.status().ToString();
    const MoeWeights& moe = (*int8)->weights().blocks.back().moe;
    EXPECT_TRUE(moe.experts[0].gate_proj.quantized() && moe.shared.down_proj.quantized()) << name;
    EXPECT_EQ(moe.expert_bias.scalar_type(), at::kFloat) << "the expert bias stays float32";
    const RoutedLogits q = RunRouted(**int8, seg);
    ASSERT_EQ(q.experts.size(), reference.experts.size());
    at::Tensor same = at::ones({12}, at::kBool);
    for (std::size_t l = 0; l < q.experts.size(); ++l) {
      const at::Tensor agree = (q.experts[l] == reference.experts[l]).all(-1);
      if (l + 1 < q.experts.size()) {
        ASSERT_TRUE(agree.all().item<bool>()) << name << ": a flip before the last layer";
      }
      same &= agree;
    }
    ASSERT_GE(same.sum().item<std::int64_t>(), 6) << name;
    const at::Tensor diff = (q.logits - reference.logits).abs().index_select(0, same.nonzero().squeeze(1));
    const double rel = (diff.max() / reference.logits.abs().max()).item<double>();
    EXPECT_GT(rel, 0.0) << name << ": quantization changed nothing";
    EXPECT_LT(rel, 0.05) << name;
  }
}

// A copy of a tiny checkpoint without one tensor (renamed in its shard and in the index).
void CopyWithout(const std::string& name, const std::string& tensor, const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string src = unmask::testing::TestDataPath(name);
  for (const auto& f : fs::directory_iterator(src)) fs::copy_file(f.path(), dir + "/" + f.path().filename().string());
  // Renamed rather than dropped: a shard may not leave a hole in its data.
  const std::string renamed = "unused." + tensor;
  auto index = nlohmann::json::parse(unmask::testing::ReadFile(dir + "/model.safetensors.index.json"));
  const std::string shard_file = index["weight_map"][tensor].get<std::string>();
  index["weight_map"].erase(tensor);
  index["weight_map"][renamed] = shard_file;
  unmask::testing::WriteFile(dir + "/model.safetensors.index.json", index.dump());
  const std::string shard = dir + "/" + shard_file;
  auto header = nlohmann::json::parse(unmask::testing::ReadHeader(shard));
  header[renamed] = header[tensor];
  header.erase(tensor);
  unmask::testing::RewriteHeader(shard, header.dump());
}

TEST(MoeForwardTest, AMissingExpertTensorIsNamed) {
  for (const auto& [name, tensor] : std::vector<std::pair<std::string, std::string>>{
           {"tiny-llada-moe", "model.layers.1.mlp.experts.7.up_proj.weight"},
           {"tiny-llada-moe-gqa", "model.layers.2.mlp.expert_bias"},
           {"tiny-llada2", "model.layers.2.mlp.shared_experts.down_proj.weight"},
           {"tiny-llada2-grouped", "model.layers.0.attention.query_key_value.weight"}}) {
    unmask::testing::TempDir dir;
    CopyWithout(name, tensor, dir.path());
    auto model = LladaModel::Load(dir.path(), ModelOptions{});
    ASSERT_FALSE(model.ok()) << name;
    EXPECT_EQ(model.status().code(), StatusCode::kNotFound) << model.status().ToString();
    EXPECT_THAT(model.status().message(), HasSubstr("'" + tensor + "'"));
  }
}

}  // namespace
}  // namespace unmask::model
