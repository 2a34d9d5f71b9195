// Dream's sampler (common/sampler/dream_sampler.h) against the official diffusion_generate on the
// tiny Dream checkpoints (tests/data/tiny-dream.golden.json, tests/data/dream-golden.md): for every
// alg (origin, maskgit_plus, topk_margin, entropy), greedy and sampled (temperature, top-p, top-k:
// the same draws from the same seeded generator), alg_temp, several eps and step counts, and
// batches of left-padded prompts: the canvas after every step and the final sequences. Bad
// options are refused by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "common/model/llada_model.h"
#include "common/sampler/dream_sampler.h"
#include "common/sampler/sampler_registry.h"
#include "tests/sampler/moe_golden_files.h"

namespace unmask {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const json& Golden() { return testing::GoldenJson("tiny-dream.golden.json"); }

struct Case {
  sampler::PromptBatch prompts;
  generation::GenerationParams params;
};

Case CaseOf(const json& c) {
  Case out;
  for (const auto& row : c["prompt"]) out.prompts.ids.push_back(row.get<std::vector<std::int64_t>>());
  auto& p = out.params;
  p.sampler = generation::SamplerMode::kDream;
  p.gen_length = c["max_new_tokens"];
  p.block_length = p.gen_length;
  p.steps = c["steps"];
  p.temperature = c["temperature"];
  p.top_p = c["top_p"].is_null() ? 1.0 : c["top_p"].get<double>();
  p.top_k = c["top_k"].is_null() ? 0 : c["top_k"].get<std::int64_t>();
  p.alg = *generation::ParseDreamAlg(c["alg"]);
  p.alg_temp = c["alg_temp"].is_null() ? 0.0 : c["alg_temp"].get<double>();
  p.eps = c["eps"];
  p.seed = c["seed"];
  p.mask_id = Golden()["mask_id"];
  p.eos_id = Golden()["eos_id"];
  return out;
}

// (golden file, case index): the committed cases, and the fresh ones drawn at random after the code
// was written (tools/golden/make_dream_fresh_golden.py).
class DreamGoldenTest : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(DreamGoldenTest, MatchesTheOfficialDiffusionGenerate) {
  const json& c = testing::GoldenJson(std::get<0>(GetParam()))["cases"][std::get<1>(GetParam())];
  json shown = c;
  shown.erase("history");
  shown.erase("steps_detail");
  SCOPED_TRACE(shown.dump());
  const Case k = CaseOf(c);
  const model::LladaModel& m = testing::Float32Model(c["model"]);
  auto s = sampler::StartDreamStepSampler(m, k.prompts, k.params);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const auto golden_rows = c["sequences"].get<std::vector<std::vector<std::int64_t>>>();
  const std::size_t prompt_len = golden_rows[0].size() - static_cast<std::size_t>(k.params.gen_length);
  std::size_t step = 0;
  auto result = sampler::RunSteps(m, **s, [&](const sampler::StepEvent&) {
    // The canvas after this step against the official history, so a divergence names its step.
    const auto canvas = c["history"][step].get<std::vector<std::vector<std::int64_t>>>();
    const auto ours = (*s)->Result().output;
    for (std::size_t r = 0; r < canvas.size(); ++r) {
      const std::vector<std::int64_t> gen(canvas[r].begin() + static_cast<std::ptrdiff_t>(prompt_len), canvas[r].end());
      EXPECT_EQ(ours[r], gen) << "row " << r << " after step " << step;
    }
    ++step;
    return !::testing::Test::HasFailure();
  }, "dream");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(step, c["history"].size());
  for (std::size_t r = 0; r < golden_rows.size(); ++r) {
    const std::vector<std::int64_t> gen(golden_rows[r].begin() + static_cast<std::ptrdiff_t>(prompt_len), golden_rows[r].end());
    EXPECT_EQ(result->output[r], gen) << "row " << r;
  }
  EXPECT_STREQ(result->sampler, "dream");
}

constexpr int kFreshCases = 24;
INSTANTIATE_TEST_SUITE_P(AllCases, DreamGoldenTest,
                         ::testing::Combine(::testing::Values("tiny-dream.golden.json"), ::testing::Range(0, 51)));
INSTANTIATE_TEST_SUITE_P(FreshCases, DreamGoldenTest,
                         ::testing::Combine(::testing::Values("tiny-dream.fresh.golden.json"),
                                            ::testing::Range(0, kFreshCases)));

TEST(DreamGoldenFile, HasTheCasesTheTestsIndex) {
  EXPECT_EQ(Golden()["cases"].size(), 51u);
  EXPECT_EQ(testing::GoldenJson("tiny-dream.fresh.golden.json")["cases"].size(), static_cast<std::size_t>(kFreshCases));
}

// Through the registry (what the executor and unmask-engine call), the same ids.
TEST(DreamSampler, GenerateRunsTheDreamMode) {
  const json& c = Golden()["cases"][0];
  const Case k = CaseOf(c);
  auto result = sampler::Generate(testing::Float32Model(c["model"]), k.prompts, k.params);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const auto row = c["sequences"][0].get<std::vector<std::int64_t>>();
  EXPECT_EQ(result->output[0], std::vector<std::int64_t>(row.end() - k.params.gen_length, row.end()));
}

TEST(DreamSampler, BadOptionsAreRefusedByName) {
  Case k = CaseOf(Golden()["cases"][0]);
  const auto& m = testing::Float32Model("tiny-dream");
  k.params.eps = 1.5;
  EXPECT_EQ(sampler::StartDreamStepSampler(m, k.prompts, k.params).status().field(), "eps");
  k = CaseOf(Golden()["cases"][0]);
  k.params.alg_temp = -1;
  EXPECT_EQ(sampler::StartDreamStepSampler(m, k.prompts, k.params).status().field(), "alg_temp");
  k = CaseOf(Golden()["cases"][0]);
  k.prompts.ids = {{17, 999}};  // outside the vocabulary of 512
  const Status s = sampler::StartDreamStepSampler(m, k.prompts, k.params).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("999"));
}

}  // namespace
}  // namespace unmask
