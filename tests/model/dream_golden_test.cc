// Dream's forward against the official DreamModel (the `forward` entries of
// tests/data/tiny-dream.golden.json, made by tools/golden/make_dream_golden.py;
// tests/data/dream-golden.md): every logit of every position, for one sequence and for a batch of
// two left-padded rows (pads masked out of attention, positions counted from each row's first
// token), on the three tiny checkpoints (GQA with q/k/v biases, tied embeddings, MQA), on every
// few-row kernel path. Pads' own rows are not compared: the official mask leaves them no key at all.
// Tolerance as the MoE goldens': |ours - golden| <= 2e-5 + 2e-5 |golden| (float32 both, sums in
// other orders, 7 significant digits in the JSON).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/model/llada_model.h"
#include "tests/fixtures/gemm_paths.h"
#include "tests/fixtures/segment_model.h"
#include "tests/sampler/moe_golden_files.h"

namespace unmask::model {
namespace {

using nlohmann::json;

constexpr double kAbs = 2e-5, kRel = 2e-5;

at::Tensor Rows(const json& rows) {
  std::vector<std::int64_t> flat;
  for (const auto& r : rows)
    for (const auto& v : r) flat.push_back(v.get<std::int64_t>());
  const auto n = static_cast<std::int64_t>(rows.size());
  return at::tensor(flat, at::kLong).view({n, -1});
}

// The official logits [B, L, V] of one entry (a single sequence's are stored [L, V]; the tiny
// checkpoints' vocabulary is 512).
at::Tensor GoldenLogits(const json& entry) {
  std::vector<float> flat;
  const json& l = entry["logits"];
  const bool batch = entry["kind"] != "single";
  const json rows = batch ? l : json::array({l});
  constexpr std::size_t vocab = 512;
  std::int64_t b = 0, t = 0;
  for (const auto& row : rows) {
    ++b;
    t = 0;
    for (const auto& pos : row) {  // a pad's row is null
      ++t;
      if (pos.is_null()) {
        flat.insert(flat.end(), vocab, 0.0f);
      } else {
        for (const auto& v : pos) flat.push_back(v.get<float>());
      }
    }
  }
  return at::tensor(flat, at::kFloat).view({b, t, -1});
}

class DreamGoldenTest : public ::testing::TestWithParam<GemmPath> {
 protected:
  void SetUp() override {
    UNMASK_SKIP_UNLESS_GEMM_PATH_RUNS(GetParam());
    path_ = std::make_unique<unmask::testing::ScopedGemmPath>(GetParam());
    ASSERT_TRUE(path_->ok());
  }
  std::unique_ptr<unmask::testing::ScopedGemmPath> path_;
};

TEST_P(DreamGoldenTest, ForwardMatchesTheOfficialModel) {
  const json& golden = unmask::testing::GoldenJson("tiny-dream.golden.json");
  ASSERT_EQ(golden["forward"].size(), 6u);
  for (const auto& entry : golden["forward"]) {
    SCOPED_TRACE(entry["model"].get<std::string>() + " " + entry["kind"].get<std::string>());
    const LladaModel& model = unmask::testing::Float32Model(entry["model"]);
    PackedSegment seg;
    seg.ids = Rows(entry["input_ids"]);
    at::Tensor real = at::ones_like(seg.ids);
    if (entry.contains("attention_mask")) {
      seg.attention_mask = Rows(entry["attention_mask"]);
      seg.position_ids = Rows(entry["position_ids"]);
      real = seg.attention_mask;
    }
    const at::Tensor ours = model.HeadLogits(model.HiddenPacked({seg})[0]).to(at::kFloat);
    const at::Tensor theirs = GoldenLogits(entry);
    ASSERT_EQ(ours.sizes(), theirs.sizes());
    const at::Tensor keep = real.to(at::kBool).unsqueeze(-1).expand_as(ours);
    const at::Tensor excess = ((ours - theirs).abs() - (kAbs + kRel * theirs.abs())).masked_fill(keep.logical_not(), -1);
    EXPECT_LE(excess.max().item<double>(), 0) << "largest difference beyond tolerance";
    const at::Tensor argmax_differs = ours.argmax(-1).ne(theirs.argmax(-1)).logical_and(real.to(at::kBool));
    EXPECT_FALSE(argmax_differs.any().item<bool>());
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKernelPath, DreamGoldenTest, unmask::testing::kAllGemmPaths);

// The loader's path: a bf16 segment gives the checkpoint's logits; int8 and int4 quantize the
// projections (the q/k/v biases stay 16-bit, as norms do) and stay close.
TEST(DreamSegmentTest, SegmentsServeDreamAtEveryPrecision) {
  PackedSegment seg;
  seg.ids = at::arange(100, 112, at::kLong).view({1, 12});
  auto direct = LladaModel::Load(unmask::testing::TestDataPath("tiny-dream"), ModelOptions{});
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  const at::Tensor reference = (*direct)->HeadLogits((*direct)->HiddenPacked({seg})[0])[0].to(at::kFloat);
  for (const auto& [precision, most] : {std::pair<const char*, double>{"bf16", 0.0}, {"int8", 0.05}, {"int4", 0.25}}) {
    SCOPED_TRACE(precision);
    auto model = unmask::testing::ModelOverSegment("tiny-dream", precision);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    EXPECT_EQ((*model)->config().architecture, checkpoint::Architecture::kDream);
    EXPECT_EQ((*model)->config().eot_token_id, 482) << "the segment's config carries the end-of-turn id";
    const LladaBlockWeights& blk = (*model)->weights().blocks[0];
    ASSERT_TRUE(blk.q_bias.defined() && blk.k_bias.defined() && blk.v_bias.defined());
    EXPECT_EQ(blk.q_proj.quantized(), std::string(precision) != "bf16");
    const at::Tensor logits = (*model)->HeadLogits((*model)->HiddenPacked({seg})[0])[0].to(at::kFloat);
    const double rel = ((logits - reference).abs().max() / reference.abs().max()).item<double>();
    if (most == 0.0) {
      EXPECT_LT(rel, 1e-6);
    } else {
      EXPECT_GT(rel, 0.0) << "quantization changed nothing";
      EXPECT_LT(rel, most);
    }
  }
}

}  // namespace
}  // namespace unmask::model
