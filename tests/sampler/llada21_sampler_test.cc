// LLaDA2.1's block diffusion with token editing (llada2_sampler.h, Llada2Options::token_editing;
// sampler mode llada21) against the official LLaDA2MoeModelLM.generate of LLaDA2.1 on the tiny
// LLaDA2.1 checkpoints (tests/data/tiny-llada21.golden.json, tests/data/moe-golden.md "LLaDA2.1"):
// the ids, and step by step the positions committed and edited with their tokens, greedy and
// sampled, with and without the cache of finished blocks. The official loop runs every block even
// past an EOS unless eos_early_stop; the sampler ends after the block that holds one (no later
// block changes the ids returned), so it runs the official calls up to that block's last.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
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

const json& Golden() { return testing::GoldenJson("tiny-llada21.golden.json"); }

const model::LladaModel& Model(const std::string& name) { return testing::Float32Model(name); }

// The case as sampler mode llada21 runs it.
generation::GenerationParams ParamsOf(const json& c) {
  generation::GenerationParams p;
  p.sampler = generation::SamplerMode::kLlada21;
  p.gen_length = c["gen_length"];
  p.block_length = c["block_length"];
  p.steps = c["steps"];
  p.temperature = c["temperature"];
  p.seed = c["seed"];
  p.eos_id = c["eos_id"];
  p.mask_id = c["mask_id"];
  p.threshold = c["threshold"];
  p.editing_threshold = c["editing_threshold"];
  p.max_post_steps = c["max_post_steps"];
  p.num_to_transfer = c["num_to_transfer"];
  p.minimal_topk = c["minimal_topk"];
  p.top_k = c["top_k"].is_null() ? 0 : c["top_k"].get<std::int64_t>();
  p.top_p = c["top_p"].is_null() ? 1.0 : c["top_p"].get<double>();
  p.eos_early_stop = c["eos_early_stop"];
  return p;
}

// The official calls up to the last of the first block after which the generated part holds an
// EOS (all of them when none does): the calls the sampler runs.
std::size_t CallsUpToTheEosBlock(const json& c) {
  const json& calls = c["calls"];
  std::map<std::int64_t, std::int64_t> canvas;  // position after the prompt -> token
  for (std::size_t i = 0; i < calls.size(); ++i) {
    for (const auto& pt : calls[i]["committed"]) canvas[pt[0].get<std::int64_t>()] = pt[1];
    for (const auto& e : calls[i]["edited"]) canvas[e[0].get<std::int64_t>()] = e[2];
    const bool block_ends = i + 1 == calls.size() || calls[i + 1]["block"] != calls[i]["block"];
    if (!block_ends) continue;
    for (const auto& [pos, token] : canvas)
      if (token == c["eos_id"].get<std::int64_t>()) return i + 1;
  }
  return calls.size();
}

// Each call's committed and edited positions inside gen_length, with their new tokens, sorted.
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> Placed(const json& call, std::int64_t gen_length) {
  std::vector<std::pair<std::int64_t, std::int64_t>> placed;
  for (const auto& pt : call["committed"]) placed.emplace_back(pt[0], pt[1]);
  for (const auto& e : call["edited"]) placed.emplace_back(e[0], e[2]);
  std::sort(placed.begin(), placed.end());
  std::vector<std::int64_t> positions, tokens;
  for (const auto& [pos, token] : placed) {
    if (pos >= gen_length) continue;  // the last block's padding: not part of the answer
    positions.push_back(pos);
    tokens.push_back(token);
  }
  return {positions, tokens};
}

// Case index, and whether the sampler keeps the finished blocks' K/V.
class Llada21GoldenTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(Llada21GoldenTest, MatchesTheOfficialGenerateStepByStep) {
  const json& c = Golden()["cases"][std::get<0>(GetParam())];
  SCOPED_TRACE("case " + std::to_string(std::get<0>(GetParam())));
  const model::LladaModel& m = Model(c["model"]);
  const generation::GenerationParams p = ParamsOf(c);
  sampler::PromptBatch prompts;
  prompts.ids = {c["prompt"][0].get<std::vector<std::int64_t>>()};
  sampler::Llada2Options options = sampler::Llada2OptionsOf(p);
  ASSERT_TRUE(options.token_editing);
  options.cache = std::get<1>(GetParam());
  auto s = sampler::StartLlada2StepSampler(m, prompts, p, options);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::vector<sampler::StepEvent> events;
  auto result = sampler::RunSteps(m, **s, [&](const sampler::StepEvent& ev) {
    events.push_back(ev);
    return true;
  }, "llada21");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_STREQ(result->sampler, "llada21");
  EXPECT_EQ(CutAtEos(result->output[0], p.eos_id), c["output"].get<std::vector<std::int64_t>>());
  const std::size_t calls = CallsUpToTheEosBlock(c);
  if (c["eos_early_stop"].get<bool>()) {
    EXPECT_EQ(calls, c["nfe"].get<std::size_t>()) << "the official loop stops there too";
  }
  ASSERT_EQ(events.size(), calls);
  for (std::size_t i = 0; i < calls; ++i) {
    const auto [positions, tokens] = Placed(c["calls"][i], p.gen_length);
    EXPECT_EQ(events[i].positions[0], positions) << "call " << i;
    EXPECT_EQ(events[i].tokens[0], tokens) << "call " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllCases, Llada21GoldenTest,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(Golden()["cases"].size())),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_cached" : "_uncached");
                         });

TEST(Llada21ModeTest, TheRegistryRunsItAndBadEditingOptionsAreNamed) {
  const json& c = Golden()["cases"][8];  // sampled, with edits
  sampler::PromptBatch prompts;
  prompts.ids = {c["prompt"][0].get<std::vector<std::int64_t>>()};
  auto result = sampler::Generate(Model(c["model"]), prompts, ParamsOf(c));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(CutAtEos(result->output[0], c["eos_id"]), c["output"].get<std::vector<std::int64_t>>());
  for (auto [field, change] : std::vector<std::pair<std::string, std::function<void(sampler::Llada2Options&)>>>{
           {"editing_threshold", [](auto& o) { o.editing_threshold = -0.5; }},
           {"max_post_steps", [](auto& o) { o.max_post_steps = -1; }},
           {"num_to_transfer", [](auto& o) { o.num_to_transfer = 0; }}}) {
    sampler::Llada2Options o = sampler::Llada2OptionsOf(ParamsOf(c));
    change(o);
    auto s = sampler::StartLlada2StepSampler(Model(c["model"]), prompts, ParamsOf(c), o);
    ASSERT_FALSE(s.ok()) << field;
    EXPECT_EQ(s.status().field(), field);
  }
}

}  // namespace
}  // namespace unmask
