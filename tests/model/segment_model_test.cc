// The model over a loader segment: unquantized weights reproduce the golden outputs exactly,
// quantized ones stay close to them.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/model/llada_model.h"
#include "common/sampler/reference_sampler.h"
#include "common/registry/progressive_loader.h"
#include "common/segment/weight_view.h"
#include "tests/fixtures/golden_case.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::model {
namespace {

// Loads the golden checkpoint into a fresh segment and attaches to it as an executor would.
std::shared_ptr<const weights::AttachedModel> LoadSegment(const std::string& precision) {
  auto spec = weights::PrecisionSpec::Parse(precision);
  EXPECT_TRUE(spec.ok());
  auto loaded = weights::LoadModelDir(unmask::testing::TestDataPath("tiny-llada"), *spec, "tiny-" + precision);
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  auto attached = weights::AttachedModel::Attach(loaded->segment.name());
  EXPECT_TRUE(attached.ok()) << attached.status().ToString();
  (void)loaded->segment.Unlink();  // the mappings stay valid; nothing is left in /dev/shm
  return std::make_shared<weights::AttachedModel>(std::move(*attached));
}

TEST(SegmentModelTest, Bf16SegmentReproducesTheGoldenCasesInFp32) {
  auto model = LladaModel::FromSegment(LoadSegment("bf16"), ModelOptions{});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::ifstream in(unmask::testing::TestDataPath("tiny-llada.golden.json"));
  const auto golden = nlohmann::json::parse(in);
  for (int index : {0, 6, 7}) {  // plain, classifier-free guidance, temperature
    const auto& c = golden["cases"][index];
    auto r = sampler::ReferenceGenerate(**model, unmask::testing::GoldenCasePrompts(c), unmask::testing::GoldenCaseParams(c));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->output, c["output"].get<std::vector<std::vector<std::int64_t>>>()) << "case " << index;
  }
}

at::Tensor GoldenForwardLogits(const LladaModel& m) {
  std::ifstream in(unmask::testing::TestDataPath("tiny-llada.golden.json"));
  auto ids = nlohmann::json::parse(in)["forward"]["input"].get<std::vector<std::int64_t>>();
  at::Tensor input = at::from_blob(ids.data(), {1, static_cast<std::int64_t>(ids.size())}, at::kLong).clone();
  return m.Logits(input, at::Tensor())[0].to(at::kFloat);
}

TEST(SegmentModelTest, QuantizedLinearLayersRunFromPackedBytes) {
  auto reference = LladaModel::FromSegment(LoadSegment("bf16"), ModelOptions{});
  ASSERT_TRUE(reference.ok());
  const at::Tensor ref = GoldenForwardLogits(**reference);
  for (const char* precision : {"int8", "int4:g32:sym", "int4:g64"}) {
    auto model = LladaModel::FromSegment(LoadSegment(precision), ModelOptions{});
    ASSERT_TRUE(model.ok()) << precision << ": " << model.status().ToString();
    EXPECT_TRUE((*model)->weights().blocks[0].q_proj.quantized()) << precision;
    EXPECT_FALSE((*model)->weights().lm_head.quantized()) << "the LM head stays 16-bit by default";
    const at::Tensor q = GoldenForwardLogits(**model);
    const double rel = ((q - ref).abs().max() / ref.abs().max()).item<double>();
    EXPECT_GT(rel, 0.0) << precision << ": quantization changed nothing";
    EXPECT_LT(rel, 0.2) << precision;
  }
}

// ":emb" (and ":head") quantize the embedding table (and the LM head) too: the model looks ids up
// in the packed table, each row dequantized, and its logits stay close to the 16-bit model's.
TEST(SegmentModelTest, AQuantizedEmbeddingTableAndHeadRunFromPackedBytes) {
  auto reference = LladaModel::FromSegment(LoadSegment("bf16"), ModelOptions{});
  ASSERT_TRUE(reference.ok());
  const at::Tensor ref = GoldenForwardLogits(**reference);
  for (const char* precision : {"int8:emb", "int4:g64:emb:head"}) {
    auto model = LladaModel::FromSegment(LoadSegment(precision), ModelOptions{});
    ASSERT_TRUE(model.ok()) << precision << ": " << model.status().ToString();
    const auto& w = (*model)->weights();
    ASSERT_TRUE(w.wte.quantized()) << precision;
    EXPECT_EQ(w.lm_head.quantized(), std::string(precision).find(":head") != std::string::npos) << precision;
    const at::Tensor ids = at::tensor(std::vector<std::int64_t>{5, 0, 17, 5}).view({2, 2});
    EXPECT_TRUE(at::equal(w.wte.Rows(ids), w.wte.weight().index_select(0, ids.view({-1})).view({2, 2, -1})))
        << precision << ": the looked-up rows are the dequantized table's";
    // The same bits as a dense model over the dequantized weights.
    LladaWeights dense = w;
    auto densify = [](Linear& l) {
      if (l.quantized()) l = Linear(l.weight());
    };
    densify(dense.wte);
    densify(dense.lm_head);
    for (auto& b : dense.blocks)
      for (Linear* l : {&b.q_proj, &b.k_proj, &b.v_proj, &b.attn_out, &b.ff_proj, &b.up_proj, &b.ff_out}) densify(*l);
    const LladaModel plain((*model)->config(), std::move(dense), ModelOptions{}, at::Device(at::kCPU));
    const at::Tensor q = GoldenForwardLogits(**model);
    EXPECT_TRUE(at::equal(q, GoldenForwardLogits(plain))) << precision;
    // And near the 16-bit model's (int4 on this random tiny model's table and head adds ~0.25).
    const double rel = ((q - ref).abs().max() / ref.abs().max()).item<double>();
    EXPECT_GT(rel, 0.0) << precision << ": quantization changed nothing";
    EXPECT_LT(rel, 0.35) << precision;
  }
}

TEST(SegmentModelTest, Bf16ComputeOverBf16SegmentIsZeroCopy) {
  auto segment = LoadSegment("bf16");
  ModelOptions bf16;
  bf16.precision = Precision::kBFloat16;
  auto model = LladaModel::FromSegment(segment, bf16);
  ASSERT_TRUE(model.ok());
  const auto* data = static_cast<const std::uint8_t*>((*model)->weights().wte.weight().data_ptr());
  const auto* base = segment->segment().data();
  EXPECT_TRUE(data >= base && data < base + segment->segment().size()) << "wte was copied out of the segment";
}

}  // namespace
}  // namespace unmask::model
