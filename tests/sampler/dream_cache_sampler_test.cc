// Fast-dLLM's Dream cache sampler (common/sampler/dream_cache_sampler.h) against the official
// FastdLLMDreamSampler.sample on the tiny Dream checkpoints (tests/data/tiny-dream.fastdllm.golden.json,
// tests/data/dream-golden.md): no cache, prefix and dual cache, with and without the confidence
// threshold, greedy and sampled, alg_temp, a left-padded batch and a batch of two equal prompts.
// Per case: the model calls one by one (the positions and tokens each call commits, so a
// divergence names its call), their number, and the final ids. Then the same generations stepped
// together in one packed forward per step, and bad options refused by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/generation/validate.h"
#include "common/model/llada_model.h"
#include "common/sampler/dream_cache_sampler.h"
#include "common/sampler/sampler_registry.h"
#include "common/sampler/step_sampler.h"
#include "tests/sampler/moe_golden_files.h"

namespace unmask {
namespace {

using nlohmann::json;
using Commits = std::vector<std::pair<std::int64_t, std::int64_t>>;  // (position from gen_start, token)

const json& Golden() { return testing::GoldenJson("tiny-dream.fastdllm.golden.json"); }

struct Case {
  sampler::PromptBatch prompts;
  generation::GenerationParams params;
  sampler::DreamCacheOptions options;
};

Case CaseOf(const json& c) {
  Case out;
  for (const auto& row : c["prompt"]) out.prompts.ids.push_back(row.get<std::vector<std::int64_t>>());
  auto& p = out.params;
  p.sampler = generation::SamplerMode::kDream;
  p.gen_length = c["max_new_tokens"];
  p.block_length = c["block_size"].is_null() ? p.gen_length : c["block_size"].get<std::int64_t>();
  p.steps = c["steps"];
  p.temperature = c["temperature"];
  p.top_p = c["top_p"].is_null() ? 1.0 : c["top_p"].get<double>();
  p.top_k = c["top_k"].is_null() ? 0 : c["top_k"].get<std::int64_t>();
  const std::string alg = c["alg"];
  out.options.threshold_rule = alg == "confidence_threshold";
  p.alg = out.options.threshold_rule ? generation::DreamAlg::kMaskgitPlus : *generation::ParseDreamAlg(alg);
  if (!c["threshold"].is_null()) p.threshold = c["threshold"];
  p.alg_temp = c["alg_temp"].is_null() ? 0.0 : c["alg_temp"].get<double>();
  p.eps = c["eps"];
  p.seed = c["seed"];
  p.mask_id = Golden()["mask_id"];
  p.eos_id = Golden()["eos_id"];
  const json& cache = c["use_cache"];
  out.options.cache = cache.is_null()       ? generation::CacheKind::kNone
                      : cache == "prefix" ? generation::CacheKind::kPrefix
                                          : generation::CacheKind::kDual;
  out.options.right_shift_logits = c["right_shift_logits"];
  return out;
}

Commits Sorted(Commits v) {
  std::sort(v.begin(), v.end());
  return v;
}

Commits GoldenCommits(const json& call, std::size_t row) {
  Commits out;
  for (const auto& pair : call["committed"][row]) out.emplace_back(pair[0].get<std::int64_t>(), pair[1].get<std::int64_t>());
  return Sorted(out);
}

Commits EventCommits(const sampler::StepEvent& ev, std::size_t row) {
  Commits out;
  for (std::size_t i = 0; i < ev.positions[row].size(); ++i) out.emplace_back(ev.positions[row][i], ev.tokens[row][i]);
  return Sorted(out);
}

std::unique_ptr<sampler::StepSampler> Start(const json& c) {
  const Case k = CaseOf(c);
  auto s = sampler::StartDreamCacheStepSampler(testing::Float32Model(c["model"]), k.prompts, k.params, k.options);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

constexpr int kCases = 25;

// (golden file, case index): the committed cases, and the fresh ones drawn at random after the code
// was written (tools/golden/make_dream_fresh_golden.py).
class DreamCacheGoldenTest : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(DreamCacheGoldenTest, MatchesTheOfficialFastdllmSampler) {
  const json& c = testing::GoldenJson(std::get<0>(GetParam()))["cases"][std::get<1>(GetParam())];
  json shown = c;
  for (const char* big : {"calls", "histories", "input_ids", "sequences"}) shown.erase(big);
  SCOPED_TRACE(shown.dump());
  auto s = Start(c);
  ASSERT_NE(s, nullptr);
  const json& calls = c["calls"];
  std::size_t call = 0;
  auto result = sampler::RunSteps(testing::Float32Model(c["model"]), *s, [&](const sampler::StepEvent& ev) {
    if (call >= calls.size()) {
      ADD_FAILURE() << "more calls than the official " << calls.size();
      return false;
    }
    for (std::size_t r = 0; r < ev.positions.size(); ++r)
      EXPECT_EQ(EventCommits(ev, r), GoldenCommits(calls[call], r)) << "row " << r << ", call " << call;
    ++call;
    return !::testing::Test::HasFailure();
  }, "dream cache");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(call, calls.size());
  EXPECT_EQ(result->steps_run, c["nfe"].get<std::int64_t>());
  EXPECT_EQ(result->output, c["output"].get<std::vector<std::vector<std::int64_t>>>());
}

constexpr int kFreshCases = 24;
INSTANTIATE_TEST_SUITE_P(AllCases, DreamCacheGoldenTest,
                         ::testing::Combine(::testing::Values("tiny-dream.fastdllm.golden.json"),
                                            ::testing::Range(0, kCases)));
INSTANTIATE_TEST_SUITE_P(FreshCases, DreamCacheGoldenTest,
                         ::testing::Combine(::testing::Values("tiny-dream.fastdllm.fresh.golden.json"),
                                            ::testing::Range(0, kFreshCases)));

// The uncached cases through the modes a user names (dream_fastdllm, dream_fastdllm+threshold)
// and the registry's Generate: the official ids and calls.
TEST(DreamCacheSampler, TheUncachedModesByNameGiveTheOfficialIds) {
  int checked = 0;
  for (const json& c : Golden()["cases"]) {
    if (!c["use_cache"].is_null() || !c["right_shift_logits"].get<bool>()) continue;  // the modes shift, as Dream
    Case k = CaseOf(c);
    k.params.sampler = k.options.threshold_rule ? generation::SamplerMode::kDreamFastdllmThreshold
                                                : generation::SamplerMode::kDreamFastdllm;
    k.params.block_length = k.params.gen_length;
    ASSERT_TRUE(generation::ValidateFields(k.params).ok()) << generation::ValidateFields(k.params).ToString();
    auto result = sampler::Generate(testing::Float32Model(c["model"]), k.prompts, k.params);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_STREQ(result->sampler, generation::SamplerModeName(k.params.sampler));
    EXPECT_EQ(result->steps_run, c["nfe"].get<std::int64_t>());
    EXPECT_EQ(result->output, c["output"].get<std::vector<std::vector<std::int64_t>>>());
    ++checked;
  }
  EXPECT_EQ(checked, 8);  // 6 schedule cases, 2 threshold cases
}

TEST(DreamCacheGoldenFile, HasTheCasesTheTestsIndex) {
  EXPECT_EQ(Golden()["cases"].size(), static_cast<std::size_t>(kCases));
  EXPECT_EQ(testing::GoldenJson("tiny-dream.fastdllm.fresh.golden.json")["cases"].size(),
            static_cast<std::size_t>(kFreshCases));
}

// Generations of every mode stepped together (one packed forward per step, each with its own
// cache and generator) give the official ids, as they do alone.
TEST(DreamCacheSampler, StepsTogetherInOnePackedForward) {
  const std::vector<int> cases = {0, 4, 9, 12, 13, 15, 19, 20, 23};
  const auto& m = testing::Float32Model("tiny-dream");
  std::vector<std::unique_ptr<sampler::StepSampler>> owned;
  std::vector<int> which;
  for (int i : cases) {
    if (Golden()["cases"][i]["model"] != "tiny-dream") continue;
    owned.push_back(Start(Golden()["cases"][i]));
    ASSERT_NE(owned.back(), nullptr);
    which.push_back(i);
  }
  for (int round = 0; round < 100; ++round) {
    std::vector<sampler::StepSampler*> active;
    for (auto& s : owned)
      if (s->running()) active.push_back(s.get());
    if (active.empty()) break;
    for (const auto& ev : sampler::StepTogether(m, active)) ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  }
  for (std::size_t j = 0; j < owned.size(); ++j) {
    const json& c = Golden()["cases"][which[j]];
    SCOPED_TRACE("case " + std::to_string(which[j]));
    EXPECT_FALSE(owned[j]->running());
    EXPECT_EQ(owned[j]->Result().output, c["output"].get<std::vector<std::vector<std::int64_t>>>());
    EXPECT_EQ(owned[j]->Result().steps_run, c["nfe"].get<std::int64_t>());
  }
}

TEST(DreamCacheSampler, NamesItsMode) {
  sampler::DreamCacheOptions o;
  EXPECT_STREQ(sampler::DreamCacheModeName(o), "dream_fastdllm");
  o.cache = generation::CacheKind::kPrefix;
  EXPECT_STREQ(sampler::DreamCacheModeName(o), "dream_prefix_cache");
  o.cache = generation::CacheKind::kDual;
  o.threshold_rule = true;
  EXPECT_STREQ(sampler::DreamCacheModeName(o), "dream_dual_cache+threshold");
}

std::string RefusedField(const Case& k) {
  const auto s = sampler::StartDreamCacheStepSampler(testing::Float32Model("tiny-dream"), k.prompts, k.params, k.options);
  EXPECT_FALSE(s.ok());
  if (s.ok()) return "";
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().ToString();
  return s.status().field();
}

TEST(DreamCacheSampler, BadOptionsAreRefusedByName) {
  const Case prefix = CaseOf(Golden()["cases"][9]);  // prefix cache, block 8 of 16, 8 steps
  Case k = prefix;
  k.params.alg = generation::DreamAlg::kOrigin;
  EXPECT_EQ(RefusedField(k), "alg");
  k = prefix;
  k.params.block_length = 5;
  EXPECT_EQ(RefusedField(k), "block_length");
  k = prefix;
  k.params.steps = 7;  // 2 blocks
  EXPECT_EQ(RefusedField(k), "steps");
  k = prefix;
  k.prompts.ids = {{17, 230, 45}, {120, 7, 388, 64}};  // left-padded
  EXPECT_EQ(RefusedField(k), "prompts");
  k = prefix;
  k.options.cache = generation::CacheKind::kDual;
  k.prompts.ids = {{17, 230, 45}, {120, 7, 388}};
  EXPECT_EQ(RefusedField(k), "prompts");
  k = prefix;
  k.options.threshold_rule = true;
  k.prompts.ids = {{17, 230, 45}, {120, 7, 388}};
  EXPECT_EQ(RefusedField(k), "prompts");
  k = prefix;
  k.params.eps = 0;
  EXPECT_EQ(RefusedField(k), "eps");
  k = prefix;
  k.params.threshold = 1.5;
  EXPECT_EQ(RefusedField(k), "threshold");
  k = prefix;
  k.prompts.ids = {{17, 999}};  // outside the vocabulary of 512
  const auto s = sampler::StartDreamCacheStepSampler(testing::Float32Model("tiny-dream"), k.prompts, k.params, k.options);
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), ::testing::HasSubstr("999"));
  // Without a cache the blocks have no effect, and a left-padded batch runs.
  k = CaseOf(Golden()["cases"][4]);
  k.params.block_length = 3;
  EXPECT_TRUE(sampler::StartDreamCacheStepSampler(testing::Float32Model("tiny-dream"), k.prompts, k.params, k.options).ok());
}

}  // namespace
}  // namespace unmask
