// Infilling and templates with holes (common/generation/canvas.h) and log-probabilities
// (GenerationParams::logprobs) in every sampler mode, on the tiny LLaDA, LLaDA2 and Dream
// checkpoints: a template's fixed tokens and a suffix are never changed nor reported as unmasked,
// every hole is filled, the suffix is seen by the gap (bidirectional models), and every committed
// token's logprob is a log-probability consistent with its top-k alternatives.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <ostream>
#include <memory>
#include <string>
#include <vector>

#include "common/generation/canvas.h"
#include "common/model/llada_model.h"
#include "common/sampler/sampler_registry.h"
#include "tests/fixtures/test_paths.h"

namespace unmask {
namespace {

using generation::SamplerMode;

const model::LladaModel& Model(const std::string& name) {
  static std::map<std::string, std::unique_ptr<model::LladaModel>> models;
  auto& m = models[name];
  if (!m) {
    auto loaded = model::LladaModel::Load(testing::TestDataPath(name), model::ModelOptions{});
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    m = std::move(*loaded);
  }
  return *m;
}

struct ModeCase {
  const char* model;
  const char* mode;
  double temperature;
};

std::string Name(const ModeCase& c) {
  std::string s = std::string(c.model) + "_" + c.mode + (c.temperature > 0 ? "_sampled" : "_greedy");
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

void PrintTo(const ModeCase& c, std::ostream* os) { *os << Name(c); }

bool Bidirectional(const ModeCase& c) { return std::string(c.model).find("llada2") == std::string::npos; }

class CanvasSamplerTest : public ::testing::TestWithParam<ModeCase> {
 protected:
  static constexpr std::int64_t kGen = 16;

  generation::GenerationParams Params() const {
    const auto& config = Model(GetParam().model).config();
    generation::GenerationParams p;
    auto mode = generation::ParseSamplerMode(GetParam().mode);
    EXPECT_TRUE(mode.ok());
    p.sampler = *mode;
    generation::ResolveLengths(kGen, std::nullopt, std::nullopt, p);
    generation::CacheKind cache;
    generation::DecodeRule rule;
    if (generation::IsBlockDiffusion(p.sampler)) {
      p.block_length = p.steps = 8;  // llada2: steps per block
    } else if (p.sampler == SamplerMode::kReference || generation::FastModeOf(p.sampler, &cache, &rule) ||
               generation::DreamCacheModeOf(p.sampler, &cache, &rule)) {
      p.block_length = 8;
      p.steps = kGen;
    }
    p.temperature = GetParam().temperature;
    p.seed = 7;
    p.logprobs = 3;
    generation::WithModelTokens(config, p);
    return p;
  }

  sampler::PromptBatch Prompt() const {
    sampler::PromptBatch b;
    b.ids = {{11, 12, 13, 14, 15}};
    return b;
  }

  // Holes at 2..5 and 10..13; fixed tokens elsewhere (ids far from any special one).
  std::vector<std::int64_t> Template() const {
    std::vector<std::int64_t> region;
    for (std::int64_t i = 0; i < kGen; ++i) {
      const bool hole = (i >= 2 && i < 6) || (i >= 10 && i < 14);
      region.push_back(hole ? generation::kHole : 40 + i);
    }
    return region;
  }

  sampler::GenerationResult Run(const sampler::PromptBatch& prompts, std::vector<sampler::StepEvent>* events) {
    auto r = sampler::Generate(Model(GetParam().model), prompts, Params(), [&](const sampler::StepEvent& ev) {
      if (events) events->push_back(ev);
      return true;
    });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : sampler::GenerationResult{};
  }
};

void ExpectLogprobsConsistent(const sampler::TokenLogprob& lp, double temperature) {
  EXPECT_LE(lp.logprob, 1e-6);
  ASSERT_EQ(lp.top.size(), 3U);
  double mass = 0;
  for (std::size_t k = 0; k < lp.top.size(); ++k) {
    EXPECT_LE(lp.top[k].second, 1e-6);
    mass += std::exp(lp.top[k].second);
    if (k > 0) { EXPECT_GE(lp.top[k - 1].second, lp.top[k].second) << "top-k not sorted"; }
    if (lp.top[k].first == lp.token) { EXPECT_NEAR(lp.top[k].second, lp.logprob, 1e-6); }
  }
  EXPECT_LE(mass, 1 + 1e-5);
  EXPECT_LE(lp.logprob, lp.top[0].second + 1e-6);
  if (temperature == 0) {  // greedy: the chosen token is the most likely one
    EXPECT_EQ(lp.token, lp.top[0].first);
  }
}

TEST_P(CanvasSamplerTest, ATemplateKeepsEveryFixedTokenAndFillsEveryHole) {
  sampler::PromptBatch prompts = Prompt();
  prompts.canvas.region = Template();
  std::vector<sampler::StepEvent> events;
  const auto result = Run(prompts, &events);
  ASSERT_EQ(result.output.size(), 1U);
  ASSERT_EQ(result.output[0].size(), static_cast<std::size_t>(kGen));
  const auto p = Params();
  for (std::int64_t i = 0; i < kGen; ++i) {
    const std::int64_t want = prompts.canvas.region[i];
    if (want == generation::kHole) {
      EXPECT_NE(result.output[0][i], p.mask_id) << "hole " << i << " left masked";
    } else {
      EXPECT_EQ(result.output[0][i], want) << "fixed token " << i << " changed";
    }
  }
  for (const auto& ev : events) {
    for (std::size_t j = 0; j < ev.positions[0].size(); ++j) {
      const std::int64_t pos = ev.positions[0][j];
      ASSERT_GE(pos, 0);
      ASSERT_LT(pos, kGen);
      EXPECT_EQ(prompts.canvas.region[pos], generation::kHole) << "step " << ev.step << " reported fixed " << pos;
    }
    ASSERT_EQ(ev.logprobs.size(), 1U);
    ASSERT_EQ(ev.logprobs[0].size(), ev.positions[0].size());
    for (std::size_t j = 0; j < ev.logprobs[0].size(); ++j) {
      EXPECT_EQ(ev.logprobs[0][j].token, ev.tokens[0][j]);
      ExpectLogprobsConsistent(ev.logprobs[0][j], p.temperature);
    }
  }
  ASSERT_EQ(result.logprobs.size(), 1U);
  ASSERT_EQ(result.logprobs[0].size(), static_cast<std::size_t>(kGen));
  for (std::int64_t i = 0; i < kGen; ++i) {
    const bool hole = prompts.canvas.region[i] == generation::kHole;
    EXPECT_EQ(result.logprobs[0][i].has_value(), hole) << i;
    if (hole && result.logprobs[0][i]) { EXPECT_EQ(result.logprobs[0][i]->token, result.output[0][i]); }
  }
}

TEST_P(CanvasSamplerTest, ASuffixIsKeptOutOfTheOutputAndSteersTheGap) {
  sampler::PromptBatch plain = Prompt();
  sampler::PromptBatch infill = Prompt();
  infill.canvas.suffix = {21, 22, 23, 24, 25, 26};
  if (!Bidirectional(GetParam())) {
    auto r = sampler::Generate(Model(GetParam().model), infill, Params());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().ToString().find("canvas.suffix"), std::string::npos) << r.status().ToString();
    return;
  }
  std::vector<sampler::StepEvent> with, without;
  const auto filled = Run(infill, &with);
  const auto continued = Run(plain, &without);
  ASSERT_EQ(filled.output.size(), 1U);
  ASSERT_EQ(filled.output[0].size(), static_cast<std::size_t>(kGen));
  for (auto id : filled.output[0]) EXPECT_NE(id, Params().mask_id);
  for (const auto& ev : with)
    for (auto pos : ev.positions[0]) EXPECT_LT(pos, kGen) << "a suffix position was reported";
  // The first committed token's logits see the suffix (bidirectional attention): they differ.
  auto first = [](const std::vector<sampler::StepEvent>& events) {
    for (const auto& ev : events)
      if (!ev.logprobs[0].empty()) return ev.logprobs[0][0].top[0].second;
    return 1.0;
  };
  ASSERT_LE(first(with), 0.0);
  ASSERT_LE(first(without), 0.0);
  EXPECT_NE(first(with), first(without));
}

TEST_P(CanvasSamplerTest, WithoutLogprobsNoneAreReported) {
  auto p = Params();
  p.logprobs = -1;
  std::vector<sampler::StepEvent> events;
  auto r = sampler::Generate(Model(GetParam().model), Prompt(), p, [&](const sampler::StepEvent& ev) {
    events.push_back(ev);
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->logprobs.empty());
  for (const auto& ev : events) EXPECT_TRUE(ev.logprobs.empty());
}

TEST_P(CanvasSamplerTest, BadCanvasesAreRefusedByField) {
  const auto p = Params();
  auto refused = [&](const sampler::PromptBatch& b, const std::string& field) {
    auto r = sampler::Generate(Model(GetParam().model), b, p);
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().ToString().find(field), std::string::npos) << r.status().ToString();
  };
  sampler::PromptBatch b = Prompt();
  b.canvas.region = std::vector<std::int64_t>(kGen - 1, generation::kHole);  // not gen_length entries
  refused(b, "canvas.region");
  b.canvas.region = std::vector<std::int64_t>(kGen, 40);  // no hole
  refused(b, "canvas.region");
  b.canvas.region = Template();
  b.canvas.region[0] = p.mask_id;  // the mask id as a fixed token
  refused(b, "canvas.region");
  b.canvas.region = Template();
  b.canvas.region[1] = Model(GetParam().model).config().embedding_size;  // outside the vocabulary
  refused(b, "canvas.region");
  if (Bidirectional(GetParam())) {
    b.canvas.region.clear();
    b.canvas.suffix = {-3};
    refused(b, "canvas.suffix");
  }
}

std::vector<ModeCase> Cases() {
  std::vector<ModeCase> cases;
  for (const char* mode : {"reference", "block_logits", "prefix_cache", "dual_cache", "threshold", "factor",
                           "prefix_cache+threshold", "dual_cache+factor"}) {
    cases.push_back({"tiny-llada", mode, 0.0});
  }
  cases.push_back({"tiny-llada", "reference", 0.7});
  cases.push_back({"tiny-llada", "dual_cache", 0.7});
  for (const char* mode : {"llada2"}) cases.push_back({"tiny-llada2", mode, 0.0});
  cases.push_back({"tiny-llada2", "llada2", 0.8});
  cases.push_back({"tiny-llada21", "llada21", 0.0});
  for (const char* mode : {"dream", "dream_prefix_cache", "dream_dual_cache", "dream_prefix_cache+threshold"})
    cases.push_back({"tiny-dream", mode, 0.0});
  cases.push_back({"tiny-dream", "dream", 0.5});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryMode, CanvasSamplerTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<ModeCase>& info) { return Name(info.param); });

}  // namespace
}  // namespace unmask
