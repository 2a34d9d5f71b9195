// LLaDA2's block-diffusion sampler (common/sampler/llada2_sampler.h) against the official
// LLaDA2MoeModelLM.generate on the tiny LLaDA2 checkpoints (tests/data/tiny-llada2.golden.json,
// tests/data/moe-golden.md): the generated ids, the number of model calls, and which positions
// every step committed, for greedy and sampled cases (temperature, top-k, top-p: the same
// multinomial draws from the same seeded generator), thresholds that commit several tokens per
// step, early stop at EOS, and group-limited routing; with and without the cache of finished
// blocks. Bad options are refused by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "common/model/llada_model.h"
#include "common/sampler/llada2_sampler.h"
#include "common/sampler/sampler_registry.h"
#include "tests/sampler/moe_golden_files.h"

namespace unmask {
namespace {

using nlohmann::json;
using testing::CutAtEos;
using ::testing::HasSubstr;

const json& Golden() { return testing::GoldenJson("tiny-llada2.golden.json"); }

const model::LladaModel& Model(const std::string& name) { return testing::Float32Model(name); }

struct Case {
  sampler::PromptBatch prompts;
  generation::GenerationParams params;
  sampler::Llada2Options options;
};

Case CaseOf(const json& c) {
  Case out;
  out.prompts.ids = {c["prompt"][0].get<std::vector<std::int64_t>>()};
  auto& p = out.params;
  p.gen_length = c["gen_length"];
  p.block_length = c["block_length"];
  p.steps = c["steps"];
  p.temperature = c["temperature"];
  p.seed = c["seed"];
  p.eos_id = c["eos_id"];
  p.mask_id = c["mask_id"];
  auto& o = out.options;
  o.threshold = c["threshold"];
  o.minimal_topk = c["minimal_topk"];
  o.top_k = c["top_k"].is_null() ? 0 : c["top_k"].get<std::int64_t>();
  o.top_p = c["top_p"].is_null() ? 1.0 : c["top_p"].get<double>();
  o.eos_early_stop = c["eos_early_stop"];
  return out;
}

// Case index, and whether the sampler keeps the finished blocks' K/V.
class Llada2GoldenTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(Llada2GoldenTest, MatchesTheOfficialGenerate) {
  const json& c = Golden()["cases"][std::get<0>(GetParam())];
  SCOPED_TRACE(c.dump());
  Case k = CaseOf(c);
  k.options.cache = std::get<1>(GetParam());
  const model::LladaModel& m = Model(c["model"]);
  auto s = sampler::StartLlada2StepSampler(m, k.prompts, k.params, k.options);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::vector<sampler::StepEvent> events;
  auto result = sampler::RunSteps(m, **s, [&](const sampler::StepEvent& ev) {
    events.push_back(ev);
    return true;
  }, "llada2");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(CutAtEos(result->output[0], k.params.eos_id), c["output"].get<std::vector<std::int64_t>>());
  EXPECT_EQ(result->steps_run, c["nfe"].get<std::int64_t>());
  // Every step's committed positions, those inside gen_length (the last block's padding past it
  // is denoised too, but is not part of the answer).
  const auto& committed = c["committed_per_step"];
  ASSERT_EQ(events.size(), committed.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    std::vector<std::int64_t> want;
    for (std::int64_t pos : committed[i].get<std::vector<std::int64_t>>())
      if (pos < k.params.gen_length) want.push_back(pos);
    std::sort(want.begin(), want.end());
    EXPECT_EQ(events[i].positions[0], want) << "step " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllCases, Llada2GoldenTest,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(Golden()["cases"].size())),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_cached" : "_uncached");
                         });

// The mode as the services run it: sampler llada2 in GenerationParams, through the registry
// (sampler_registry.h), and packed with other LLaDA2 generations in one forward per step (what
// the executor does), joining at different steps: the official ids every time.
generation::GenerationParams AsMode(const Case& k) {
  generation::GenerationParams p = k.params;
  p.sampler = generation::SamplerMode::kLlada2;
  p.threshold = k.options.threshold;
  p.minimal_topk = k.options.minimal_topk;
  p.top_k = k.options.top_k;
  p.top_p = k.options.top_p;
  p.eos_early_stop = k.options.eos_early_stop;
  return p;
}

TEST(Llada2ModeTest, TheRegistryRunsItFromGenerationParams) {
  for (int index : {3, 4, 8, 10, 17}) {  // sampled, minimal_topk, top-k + top-p, EOS early stop
    const json& c = Golden()["cases"][index];
    const Case k = CaseOf(c);
    auto result = sampler::Generate(Model(c["model"]), k.prompts, AsMode(k));
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_EQ(CutAtEos(result->output[0], k.params.eos_id), c["output"].get<std::vector<std::int64_t>>()) << index;
    EXPECT_EQ(result->steps_run, c["nfe"].get<std::int64_t>()) << index;
    EXPECT_STREQ(result->sampler, "llada2");
  }
}

TEST(Llada2ModeTest, GenerationsPackedTogetherGiveTheirOwnIds) {
  std::vector<int> cases;  // every case on the default checkpoint, joining one step apart
  for (int i = 0; i < static_cast<int>(Golden()["cases"].size()); ++i)
    if (Golden()["cases"][i]["model"] == Golden()["cases"][0]["model"]) cases.push_back(i);
  ASSERT_GE(cases.size(), 4u);
  const model::LladaModel& m = Model(Golden()["cases"][0]["model"]);
  std::vector<std::unique_ptr<sampler::StepSampler>> samplers(cases.size());
  std::vector<sampler::GenerationResult> results(cases.size());
  std::size_t started = 0, finished = 0;
  for (int tick = 0; finished < cases.size() && tick < 1000; ++tick) {
    if (started < cases.size()) {
      const Case k = CaseOf(Golden()["cases"][cases[started]]);
      auto s = sampler::StartStepSampler(m, k.prompts, AsMode(k));
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      samplers[started++] = std::move(*s);
    }
    std::vector<sampler::StepSampler*> active;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < started; ++i) {
      if (samplers[i] && samplers[i]->running()) {
        active.push_back(samplers[i].get());
        which.push_back(i);
      }
    }
    if (active.empty()) continue;
    const auto events = sampler::StepTogether(m, active);
    for (std::size_t j = 0; j < active.size(); ++j) {
      ASSERT_TRUE(events[j].ok()) << events[j].status().ToString();
      if (active[j]->running()) continue;
      results[which[j]] = active[j]->Result();
      ++finished;
    }
  }
  ASSERT_EQ(finished, cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const json& c = Golden()["cases"][cases[i]];
    EXPECT_EQ(CutAtEos(results[i].output[0], c["eos_id"]), c["output"].get<std::vector<std::int64_t>>())
        << "case " << cases[i];
    EXPECT_EQ(results[i].steps_run, c["nfe"].get<std::int64_t>()) << "case " << cases[i];
  }
}

TEST(Llada2OptionsTest, BadOptionsAreRefusedByName) {
  const json& c = Golden()["cases"][0];
  const model::LladaModel& m = Model(c["model"]);
  auto refused = [&](auto change, const std::string& field) {
    Case k = CaseOf(c);
    change(k);
    auto s = sampler::StartLlada2StepSampler(m, k.prompts, k.params, k.options);
    ASSERT_FALSE(s.ok()) << field;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << field;
    EXPECT_THAT(s.status().message(), HasSubstr(field));
  };
  refused([](Case& k) { k.prompts.ids.push_back(k.prompts.ids[0]); }, "prompts");
  refused([](Case& k) { k.params.block_length = 0; }, "block_length");
  refused([](Case& k) { k.params.steps = 0; }, "steps");
  refused([](Case& k) { k.options.minimal_topk = 0; }, "minimal_topk");
  refused([](Case& k) { k.options.threshold = 1.5; }, "threshold");
  refused([](Case& k) { k.options.top_k = -1; }, "top_k");
  refused([](Case& k) { k.options.top_p = 0; }, "top_p");
  refused([](Case& k) { k.params.mask_id = 1 << 20; }, "mask_id");
  refused([](Case& k) { k.prompts.ids[0][0] = 1 << 20; }, "row 0");
}

}  // namespace
}  // namespace unmask
