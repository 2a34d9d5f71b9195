// The Monte Carlo likelihood (common/sampler/likelihood.h) against the official evaluation code
// (tests/data/likelihood.golden.json, made by tools/golden/make_likelihood_golden.py): LLaDA's
// get_log_likelihood() with and without guidance, its greedy check (one case true), a context of
// no tokens and a one-token continuation on LLaDA-MoE; Dream's mc estimator; the same seed gives
// the official draws, forwards of any size the same value, and bad settings are refused by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/generation/validate.h"
#include "common/sampler/likelihood.h"
#include "tests/sampler/moe_golden_files.h"

namespace unmask {
namespace {

using nlohmann::json;

const json& Golden() { return testing::GoldenJson("likelihood.golden.json"); }

std::vector<std::int64_t> IdsOf(const json& c) {
  auto ids = c["context"].get<std::vector<std::int64_t>>();
  for (std::int64_t t : c["continuation"].get<std::vector<std::int64_t>>()) ids.push_back(t);
  return ids;
}

generation::GenerationParams ParamsOf(const json& c) {
  generation::GenerationParams p;
  p.cfg_scale = c["cfg_scale"];
  p.seed = c["seed"];
  generation::LikelihoodParams l;
  l.continuation_tokens = static_cast<std::int64_t>(c["continuation"].size());
  l.mc_num = c["mc_num"];
  l.batch_size = c["batch_size"];
  l.check_greedy = c.contains("greedy");
  p.likelihood = l;
  return p;
}

class LikelihoodGoldenTest : public ::testing::TestWithParam<int> {};

TEST_P(LikelihoodGoldenTest, TheOfficialEstimateAndGreedyCheckForTheSameSeed) {
  const json& c = Golden()["cases"][GetParam()];
  const model::LladaModel& m = testing::Float32Model(c["model"]);
  const auto ids = IdsOf(c);
  const auto params = ParamsOf(c);
  ASSERT_TRUE(generation::ValidateLikelihood(*params.likelihood, m.config(), static_cast<std::int64_t>(ids.size()),
                                             params.cfg_scale)
                  .ok());
  const double want = c["loglikelihood"];
  // One row per forward, and a whole draw per forward: the rows are split, not the estimate.
  for (std::int64_t tokens_per_pass : {std::int64_t{1}, std::int64_t{1} << 20}) {
    SCOPED_TRACE("tokens_per_pass " + std::to_string(tokens_per_pass));
    const auto got = sampler::EstimateLikelihood(m, ids, params, tokens_per_pass);
    EXPECT_NEAR(got.loglikelihood, want, 1e-4 * std::max(1.0, std::abs(want)));
    EXPECT_EQ(got.samples, c["mc_num"].get<std::int64_t>());
    if (c.contains("greedy")) {
      ASSERT_TRUE(got.greedy.has_value());
      EXPECT_EQ(*got.greedy, c["greedy"].get<bool>());
    } else {
      EXPECT_FALSE(got.greedy.has_value());
    }
    // One draw, or a one-token continuation (every row masks it: every draw is alike): no spread.
    const std::int64_t batches = c["mc_num"].get<std::int64_t>() / c["batch_size"].get<std::int64_t>();
    if (batches == 1 || c["continuation"].size() == 1) {
      EXPECT_EQ(got.standard_error, 0);
    } else {
      EXPECT_GE(got.standard_error, 0);
    }
    if (GetParam() == 0) {
      EXPECT_GT(got.standard_error, 0.1) << "two unlike draws";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllCases, LikelihoodGoldenTest, ::testing::Range(0, static_cast<int>(Golden()["cases"].size())));

TEST(LikelihoodGoldenTest, CoversTheGreedyAnswerBothWaysAndBothFamilies) {
  int greedy_true = 0, greedy_false = 0, dream = 0, guided = 0;
  for (const json& c : Golden()["cases"]) {
    if (c.contains("greedy")) (c["greedy"].get<bool>() ? greedy_true : greedy_false)++;
    dream += c["model"].get<std::string>().find("dream") != std::string::npos;
    guided += c["cfg_scale"].get<double>() > 0;
  }
  EXPECT_GE(greedy_true, 1);
  EXPECT_GE(greedy_false, 1);
  EXPECT_GE(dream, 2);
  EXPECT_GE(guided, 1);
}

TEST(LikelihoodTest, AnotherSeedDrawsOtherMasks) {
  const json& c = Golden()["cases"][0];
  auto params = ParamsOf(c);
  params.seed += 1;
  params.likelihood->check_greedy = false;
  const auto got = sampler::EstimateLikelihood(testing::Float32Model(c["model"]), IdsOf(c), params, 1 << 20);
  EXPECT_GT(std::abs(got.loglikelihood - c["loglikelihood"].get<double>()), 1e-3);
}

TEST(LikelihoodTest, AGreedyMismatchEndsTheCheckEarly) {
  const json& c = Golden()["cases"][0];  // greedy false
  ASSERT_FALSE(c["greedy"].get<bool>());
  const auto params = ParamsOf(c);
  const auto got = sampler::EstimateLikelihood(testing::Float32Model(c["model"]), IdsOf(c), params, 1 << 20);
  const std::int64_t draws = c["mc_num"].get<std::int64_t>() / c["batch_size"].get<std::int64_t>();
  EXPECT_LT(got.forwards, draws + static_cast<std::int64_t>(c["continuation"].size()));
  EXPECT_GE(got.forwards, draws + 1);
}

TEST(LikelihoodTest, RefusesWhatTheOfficialCodeHasNoAnswerFor) {
  generation::LikelihoodParams l;
  l.continuation_tokens = 3;
  const auto& moe = testing::Float32Model("tiny-llada-moe");
  const auto& dream = testing::Float32Model("tiny-dream");
  const auto& llada2 = testing::Float32Model("tiny-llada2");
  EXPECT_TRUE(generation::ValidateLikelihood(l, moe.config(), 5, 0.5).ok());
  Status s = generation::ValidateLikelihood(l, llada2.config(), 5, 0);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("likelihood: LLaDA2 models"));
  l.continuation_tokens = 6;
  s = generation::ValidateLikelihood(l, moe.config(), 5, 0);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("likelihood.continuation_tokens"));
  l.continuation_tokens = 3;
  l.check_greedy = true;
  EXPECT_THAT(generation::ValidateLikelihood(l, dream.config(), 5, 0).message(), ::testing::HasSubstr("likelihood.check_greedy"));
  l.check_greedy = false;
  EXPECT_THAT(generation::ValidateLikelihood(l, dream.config(), 5, 1.0).message(), ::testing::HasSubstr("cfg_scale"));
}

}  // namespace
}  // namespace unmask
