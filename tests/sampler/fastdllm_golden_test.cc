// The cache modes against what Fast-dLLM's own generate_with_prefix_cache / generate_with_dual_cache
// returned (tests/data/tiny-llada.fastdllm.golden.json): float32, temperature 0, early stop off
// (Fast-dLLM has none), identical ids and the same number of forwards, threshold None and 0.9,
// on the random tiny checkpoint and on its "confident" variant (LM head x40, stored as bf16), on
// every few-row kernel path.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include <ATen/ATen.h>

#include "common/model/llada_model.h"
#include "common/sampler/sampler_registry.h"
#include "tests/fixtures/gemm_paths.h"
#include "tests/fixtures/test_paths.h"

namespace unmask {
namespace {

using nlohmann::json;

class FastDllmGoldenTest : public ::testing::TestWithParam<std::tuple<int, model::GemmPath>> {
 protected:
  static void SetUpTestSuite() {
    std::ifstream in(testing::TestDataPath("tiny-llada.fastdllm.golden.json"));
    golden_ = new json(json::parse(in));
    model::ModelOptions options;
    options.precision = model::Precision::kFloat32;
    auto loaded = model::LladaModel::Load(testing::TestDataPath("tiny-llada"), options);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    base_ = loaded->release();
    // The golden's confident checkpoint: the bf16 LM head times 40 in float32, stored as bf16.
    model::LladaWeights w = base_->weights();
    w.lm_head = model::Linear((w.lm_head.weight().to(at::kFloat) * 40.0).to(at::kBFloat16));
    confident_ = new model::LladaModel(base_->config(), std::move(w), options, at::Device(at::kCPU));
  }
  static void TearDownTestSuite() {
    delete confident_;
    delete base_;
    delete golden_;
  }
  static json* golden_;
  static model::LladaModel* base_;
  static model::LladaModel* confident_;
};
json* FastDllmGoldenTest::golden_ = nullptr;
model::LladaModel* FastDllmGoldenTest::base_ = nullptr;
model::LladaModel* FastDllmGoldenTest::confident_ = nullptr;

TEST_P(FastDllmGoldenTest, SameIdsAndForwardsAsFastDllm) {
  const auto [index, path] = GetParam();
  UNMASK_SKIP_UNLESS_GEMM_PATH_RUNS(path);
  testing::ScopedGemmPath scoped(path);
  ASSERT_TRUE(scoped.ok());
  const json& c = (*golden_)["cases"][index];
  generation::GenerationParams p;
  p.steps = c["steps"];
  p.gen_length = c["gen_length"];
  p.block_length = c["block_length"];
  p.temperature = 0;
  sampler::PromptBatch prompts;
  prompts.ids = {c["prompt"].get<std::vector<std::int64_t>>()};
  generation::FastOptions o;
  o.early_stop = false;
  if (!c["threshold"].is_null()) o.threshold = c["threshold"];
  auto mode = generation::ParseSamplerMode(c["sampler"]);
  ASSERT_TRUE(mode.ok()) << mode.status().ToString();
  const model::LladaModel& m = c["model"] == "confident" ? *confident_ : *base_;
  auto result = sampler::Generate(*mode, m, prompts, p, o);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->output[0], c["output"].get<std::vector<std::int64_t>>())
      << c["model"] << " " << c["sampler"] << " gen " << c["gen_length"] << " block " << c["block_length"];
  EXPECT_EQ(result->steps_run, c["nfe"].get<std::int64_t>());
}

INSTANTIATE_TEST_SUITE_P(AllCases, FastDllmGoldenTest, ::testing::Combine(::testing::Range(0, 40), testing::kAllGemmPaths));

}  // namespace
}  // namespace unmask
