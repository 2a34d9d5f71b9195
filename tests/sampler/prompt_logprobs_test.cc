// Prompt log-probabilities (common/sampler/prompt_logprobs.h) against the official models
// (tests/data/prompt-logprobs.golden.json, made by tools/golden/make_prompt_logprobs_golden.py,
// which also checks the definition against the official LLaDA get_log_likelihood() and Dream's
// ar_ftb estimator): a bidirectional LLaDA-MoE model, LLaDA2's block-causal attention and Dream's
// shifted prediction, each token's value and its alternatives; forwards of any size give the same.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "common/sampler/prompt_logprobs.h"
#include "common/sampler/step_logprobs.h"
#include "tests/sampler/moe_golden_files.h"

namespace unmask {
namespace {

using nlohmann::json;

const json& Golden() { return testing::GoldenJson("prompt-logprobs.golden.json"); }

sampler::PromptScoring ScoringOf(const json& c, std::int64_t tokens_per_pass) {
  sampler::PromptScoring s;
  s.k = c["k"];
  s.causal_block = c.value("block_length", 0);
  s.tokens_per_pass = tokens_per_pass;
  return s;
}

class PromptLogprobsGoldenTest : public ::testing::TestWithParam<int> {};

TEST_P(PromptLogprobsGoldenTest, EveryTokenAndItsAlternativesAsTheOfficialModelGivesThem) {
  const json& c = Golden()["cases"][GetParam()];
  const auto prompt = c["prompt"].get<std::vector<std::int64_t>>();
  const auto got = sampler::PromptLogprobs(testing::Float32Model(c["model"]), prompt, ScoringOf(c, 4096));
  ASSERT_EQ(got.size(), prompt.size());
  EXPECT_FALSE(got[0].has_value()) << "nothing comes before the first token";
  for (std::size_t j = 1; j < prompt.size(); ++j) {
    SCOPED_TRACE("token " + std::to_string(j));
    const json& want = c["tokens"][j];
    ASSERT_TRUE(got[j].has_value());
    EXPECT_EQ(got[j]->token, prompt[j]);
    EXPECT_NEAR(got[j]->logprob, want["logprob"].get<double>(), 2e-4);
    ASSERT_EQ(got[j]->top.size(), want["top"].size());
    for (std::size_t t = 0; t < got[j]->top.size(); ++t) {
      EXPECT_EQ(got[j]->top[t].first, want["top"][t][0].get<std::int64_t>());
      EXPECT_NEAR(got[j]->top[t].second, want["top"][t][1].get<double>(), 2e-4);
    }
    // Its rank (vLLM's: 1 + the tokens strictly more likely): its place among the alternatives,
    // else beyond them.
    std::size_t place = 0;
    while (place < got[j]->top.size() && got[j]->top[place].first != prompt[j]) ++place;
    if (place < got[j]->top.size()) {
      EXPECT_EQ(got[j]->rank, static_cast<std::int64_t>(place) + 1);
    } else {
      EXPECT_GT(got[j]->rank, static_cast<std::int64_t>(got[j]->top.size()));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllCases, PromptLogprobsGoldenTest,
                         ::testing::Range(0, static_cast<int>(Golden()["cases"].size())));

// The official estimators the golden script checked the definition against, as recorded: the
// last token is LLaDA's get_log_likelihood() with it as the answer; a continuation's sum is
// Dream's ar_ftb log-likelihood.
TEST(PromptLogprobsGoldenTest, SumsAreTheOfficialEstimators) {
  int checked = 0;
  for (const json& c : Golden()["cases"]) {
    const auto prompt = c["prompt"].get<std::vector<std::int64_t>>();
    const auto got = sampler::PromptLogprobs(testing::Float32Model(c["model"]), prompt, ScoringOf(c, 4096));
    if (c.contains("official_llada_get_log_likelihood_last_token")) {
      EXPECT_NEAR(got.back()->logprob, c["official_llada_get_log_likelihood_last_token"].get<double>(), 2e-4);
      ++checked;
    }
    if (c.contains("official_dream_ar_ftb")) {
      double sum = 0;
      for (std::size_t j = c["official_dream_ar_ftb"]["context_tokens"]; j < prompt.size(); ++j) sum += got[j]->logprob;
      EXPECT_NEAR(sum, c["official_dream_ar_ftb"]["loglikelihood"].get<double>(), 1e-3);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4);
}

TEST(PromptLogprobsTest, ForwardsOfOneRowGiveWhatOneForwardOfAllRowsGives) {
  for (const json& c : Golden()["cases"]) {
    SCOPED_TRACE(c["model"].get<std::string>());
    const auto prompt = c["prompt"].get<std::vector<std::int64_t>>();
    const auto& model = testing::Float32Model(c["model"]);
    const auto whole = sampler::PromptLogprobs(model, prompt, ScoringOf(c, 4096));
    const auto rows = sampler::PromptLogprobs(model, prompt, ScoringOf(c, 1));  // one row per forward
    const auto three = sampler::PromptLogprobs(model, prompt, ScoringOf(c, 3 * static_cast<std::int64_t>(prompt.size())));
    for (std::size_t j = 1; j < prompt.size(); ++j) {
      EXPECT_NEAR(rows[j]->logprob, whole[j]->logprob, 1e-5) << j;
      EXPECT_NEAR(three[j]->logprob, whole[j]->logprob, 1e-5) << j;
    }
  }
}

// A token's rank is vLLM's: 1 + the tokens strictly more likely, so ties share the better rank,
// whether or not the token is among the alternatives kept.
TEST(PromptLogprobsTest, RanksCountTheTokensStrictlyMoreLikely) {
  const at::Tensor logits = at::tensor({3.0f, 1.0f, 3.0f, -2.0f, 0.5f, 1.0f}).view({1, 6});
  const at::Tensor zero = at::zeros({1}, at::kLong);
  const sampler::StepLogprobs lp = sampler::StepLogprobs::Take(logits, zero, zero, 1);
  const std::vector<std::int64_t> want = {1, 3, 1, 6, 5, 3};  // ids 0 and 2 tie first, 1 and 5 third
  for (std::int64_t token = 0; token < 6; ++token) EXPECT_EQ(lp.Of(0, token).rank, want[token]) << token;
  EXPECT_EQ(lp.Of(0, 3).top.size(), 1u);
}

TEST(PromptLogprobsTest, PromptsTooShortToScoreAndNoAlternatives) {
  const auto& model = testing::Float32Model("tiny-llada-moe");
  sampler::PromptScoring s;
  s.tokens_per_pass = 64;
  EXPECT_TRUE(sampler::PromptLogprobs(model, {}, s).empty());
  const auto one = sampler::PromptLogprobs(model, {17}, s);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_FALSE(one[0].has_value());
  const auto two = sampler::PromptLogprobs(model, {17, 230}, s);  // k = 0: the value, no alternatives
  ASSERT_TRUE(two[1].has_value());
  EXPECT_TRUE(two[1]->top.empty());
  EXPECT_LT(two[1]->logprob, 0);
}

TEST(PromptLogprobsTest, ScoringFollowsTheJob) {
  generation::GenerationParams p;
  p.prompt_logprobs = 5;
  p.block_length = 8;
  p.attention_query_chunk = 16;
  const auto llada2 = sampler::ScoringFor(testing::Float32Model("tiny-llada2"), p, 40);
  EXPECT_EQ(llada2.k, 5);
  EXPECT_EQ(llada2.causal_block, 8) << "LLaDA2 scores with its block-causal attention";
  EXPECT_EQ(llada2.tokens_per_pass, 40);
  EXPECT_EQ(llada2.attention_query_chunk, 16);
  p.cfg_scale = 1.5;
  const auto moe = sampler::ScoringFor(testing::Float32Model("tiny-llada-moe"), p, 40);
  EXPECT_EQ(moe.causal_block, 0);
  EXPECT_EQ(moe.tokens_per_pass, 80) << "a guided job's forwards are twice as large";
}

}  // namespace
}  // namespace unmask
