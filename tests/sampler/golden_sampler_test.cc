// The reference sampler against the official generate() (golden vectors computed in float32), on
// every few-row kernel path: the bf16 checkpoint computed in fp32, its weights kept as bf16.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include <ATen/ATen.h>

#include "common/model/llada_model.h"
#include "common/sampler/reference_sampler.h"
#include "common/sampler/sampler_registry.h"
#include "tests/fixtures/gemm_paths.h"
#include "tests/fixtures/test_paths.h"
#include "tests/fixtures/golden_case.h"

namespace unmask {
namespace {

using nlohmann::json;

class GoldenSamplerTest : public ::testing::TestWithParam<std::tuple<int, model::GemmPath>> {
 protected:
  static void SetUpTestSuite() {
    std::ifstream in(testing::TestDataPath("tiny-llada.golden.json"));
    golden_ = new json(json::parse(in));
    model::ModelOptions options;
    options.precision = model::Precision::kFloat32;
    auto loaded = model::LladaModel::Load(testing::TestDataPath("tiny-llada"), options);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    model_ = loaded->release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete golden_;
  }
  static json* golden_;
  static model::LladaModel* model_;
};
json* GoldenSamplerTest::golden_ = nullptr;
model::LladaModel* GoldenSamplerTest::model_ = nullptr;

TEST_P(GoldenSamplerTest, MatchesOfficialOutputAndUnmaskingOrder) {
  const auto [index, path] = GetParam();
  UNMASK_SKIP_UNLESS_GEMM_PATH_RUNS(path);
  testing::ScopedGemmPath scoped(path);
  ASSERT_TRUE(scoped.ok());
  const json& c = (*golden_)["cases"][index];
  const generation::GenerationParams p = testing::GoldenCaseParams(c);
  const sampler::PromptBatch prompts = testing::GoldenCasePrompts(c);

  // The reference loop itself, and "reference" as every caller asks for it (the registry: at
  // temperature 0 it computes the LM head over the current block only).
  for (const bool via_registry : {false, true}) {
    SCOPED_TRACE(via_registry ? "Generate(kReference)" : "ReferenceGenerate");
    std::vector<std::vector<std::vector<std::int64_t>>> per_step;
    auto on_step = [&](const sampler::StepEvent& ev) {
      per_step.push_back(ev.positions);
      return true;
    };
    auto result = via_registry ? sampler::Generate(generation::SamplerMode::kReference, *model_, prompts, p, {}, on_step)
                               : sampler::ReferenceGenerate(*model_, prompts, p, on_step);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_EQ(result->output, c["output"].get<std::vector<std::vector<std::int64_t>>>());
    EXPECT_EQ(per_step, c["unmasked_per_step"].get<std::vector<std::vector<std::vector<std::int64_t>>>>());
    EXPECT_EQ(result->steps_run, p.steps);
    EXPECT_STREQ(result->sampler, "reference");
  }
}

INSTANTIATE_TEST_SUITE_P(AllCases, GoldenSamplerTest, ::testing::Combine(::testing::Range(0, 10), testing::kAllGemmPaths));

class GoldenForwardTest : public ::testing::TestWithParam<model::GemmPath> {};

TEST_P(GoldenForwardTest, LogitsMatchOfficialModel) {
  UNMASK_SKIP_UNLESS_GEMM_PATH_RUNS(GetParam());
  testing::ScopedGemmPath scoped(GetParam());
  ASSERT_TRUE(scoped.ok());
  std::ifstream in(testing::TestDataPath("tiny-llada.golden.json"));
  const json golden = json::parse(in);
  const json& f = golden["forward"];
  auto loaded = model::LladaModel::Load(testing::TestDataPath("tiny-llada"), model::ModelOptions{});
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const auto ids = f["input"].get<std::vector<std::int64_t>>();
  at::Tensor input = at::from_blob(const_cast<std::int64_t*>(ids.data()), {1, static_cast<std::int64_t>(ids.size())}, at::kLong).clone();
  at::Tensor logits = (*loaded)->Logits(input, at::Tensor())[0];
  at::Tensor argmax = logits.argmax(-1);
  at::Tensor lse = logits.logsumexp(-1);
  const auto columns = f["columns"].get<std::vector<std::int64_t>>();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(argmax[i].item<std::int64_t>(), f["argmax"][i].get<std::int64_t>()) << "position " << i;
    EXPECT_NEAR(lse[i].item<double>(), f["logsumexp"][i].get<double>(), 1e-4) << "position " << i;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      EXPECT_NEAR(logits[i][columns[c]].item<double>(), f["logits_at_columns"][i][c].get<double>(), 1e-4)
          << "position " << i << " column " << columns[c];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKernelPath, GoldenForwardTest, testing::kAllGemmPaths);

}  // namespace
}  // namespace unmask
