// The dream sampler mode's parameters (issue 30): its defaults (no blocks, steps = gen_length,
// alg entropy, eps 1e-3), its options refused elsewhere, the LLaDA switches it lacks refused there,
// the model check both ways, and the proto door (alg by name, eps unset = the default).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "common/generation/params.h"
#include "common/generation/params_proto.h"
#include "common/generation/validate.h"

namespace unmask::generation {
namespace {

using ::testing::HasSubstr;

GenerationParams Dream(std::optional<std::int64_t> gen = std::nullopt) {
  GenerationParams p;
  p.sampler = SamplerMode::kDream;
  ResolveLengths(gen, std::nullopt, std::nullopt, p);
  return p;
}

TEST(DreamParams, DefaultsAreTheModelCardsWithNoBlocks) {
  const GenerationParams p = Dream(100);
  EXPECT_EQ(p.gen_length, 100);
  EXPECT_EQ(p.block_length, 100);  // one block: diffusion_generate has none
  EXPECT_EQ(p.steps, 100);
  EXPECT_EQ(p.alg, DreamAlg::kEntropy);
  EXPECT_EQ(p.alg_temp, 0);
  EXPECT_EQ(p.eps, 1e-3);
  EXPECT_TRUE(ValidateFields(p).ok()) << ValidateFields(p).ToString();
  // Steps above gen_length run (a step may commit nothing), as in the official loop.
  GenerationParams more = p;
  more.steps = 300;
  EXPECT_TRUE(ValidateFields(more).ok());
  EXPECT_EQ(*ParseSamplerMode("dream"), SamplerMode::kDream);
  EXPECT_STREQ(SamplerModeName(SamplerMode::kDream), "dream");
  EXPECT_FALSE(IsBlockDiffusion(SamplerMode::kDream));
  for (DreamAlg a : {DreamAlg::kOrigin, DreamAlg::kMaskgitPlus, DreamAlg::kTopkMargin, DreamAlg::kEntropy})
    EXPECT_EQ(*ParseDreamAlg(DreamAlgName(a)), a);
  const Status bad = ParseDreamAlg("greedy").status();
  EXPECT_EQ(bad.field(), "alg");
  EXPECT_THAT(bad.message(), HasSubstr("'greedy' is not one of origin, maskgit_plus, topk_margin, entropy"));
}

TEST(DreamParams, EveryBadValueNamesItsField) {
  struct Case {
    std::function<void(GenerationParams&)> edit;
    const char* field;
    const char* says;
  } cases[] = {
      {[](auto& p) { p.block_length = 32; }, "block_length", "sampler 'dream' has no blocks: leave it out or give gen_length (128), got 32"},
      {[](auto& p) { p.steps = 0; }, "steps", "must be >= 1, got 0"},
      {[](auto& p) { p.steps = kMaxGenLength + 1; }, "steps", "must be <= 16384"},
      {[](auto& p) { p.eps = 0; }, "eps", "must be in (0, 1), got 0"},
      {[](auto& p) { p.eps = 1; }, "eps", "must be in (0, 1), got 1"},
      {[](auto& p) { p.eps = std::nan(""); }, "eps", "must be in (0, 1)"},
      {[](auto& p) { p.alg_temp = -1; }, "alg_temp", "must be in [0, 100]"},
      {[](auto& p) { p.top_k = -1; }, "top_k", "must be >= 0 (0 = off), got -1"},
      {[](auto& p) { p.top_p = 0; }, "top_p", "must be in (0, 1] (1 = off), got 0"},
      {[](auto& p) { p.cfg_scale = 1; }, "cfg_scale", "sampler 'dream' has no classifier-free guidance"},
      {[](auto& p) { p.remasking = Remasking::kRandom; }, "remasking", "sampler 'dream' commits the most confident"},
      {[](auto& p) { p.logits_eos_inf = true; }, "logits_eos_inf", "sampler 'dream' has no such switch"},
      {[](auto& p) { p.minimal_topk = 2; }, "minimal_topk", "only samplers 'llada2' and 'llada21'"},
      {[](auto& p) { p.eos_early_stop = true; }, "eos_early_stop", "only samplers 'llada2' and 'llada21'"},
      {[](auto& p) { p.num_to_transfer = 2; }, "num_to_transfer", "only sampler 'llada21'"},
  };
  for (const auto& c : cases) {
    GenerationParams p = Dream();
    c.edit(p);
    const Status s = ValidateFields(p);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.says;
    EXPECT_EQ(s.field(), c.field) << s.message();
    EXPECT_THAT(s.message(), HasSubstr(std::string(c.field) + ": " + c.says));
  }
}

TEST(DreamParams, TheOtherModesRefuseItsOptions) {
  struct Case {
    std::function<void(GenerationParams&)> edit;
    const char* field;
  } cases[] = {
      {[](auto& p) { p.alg = DreamAlg::kOrigin; }, "alg"},
      {[](auto& p) { p.alg_temp = 0.5; }, "alg_temp"},
      {[](auto& p) { p.eps = 0.01; }, "eps"},
  };
  for (SamplerMode mode : {SamplerMode::kReference, SamplerMode::kDualCacheThreshold, SamplerMode::kLlada2}) {
    for (const auto& c : cases) {
      GenerationParams p;
      p.sampler = mode;
      ResolveLengths(std::nullopt, std::nullopt, std::nullopt, p);
      c.edit(p);
      const Status s = ValidateFields(p);
      EXPECT_EQ(s.field(), c.field) << s.ToString();
      EXPECT_THAT(s.message(), HasSubstr("only the Dream samplers (dream and Fast-dLLM's dream_* modes) use it; sampler '" +
                                         std::string(SamplerModeName(mode)) + "' has no such option"));
    }
  }
}

TEST(DreamParams, TheModelsArchitectureChoosesTheMode) {
  checkpoint::LladaConfig dream;
  dream.architecture = checkpoint::Architecture::kDream;
  EXPECT_EQ(DefaultSampler(dream), SamplerMode::kDream);
  EXPECT_TRUE(ValidateSamplerForModel(SamplerMode::kDream, dream).ok());
  for (SamplerMode mode : {SamplerMode::kReference, SamplerMode::kDualCacheThreshold, SamplerMode::kLlada2}) {
    const Status s = ValidateSamplerForModel(mode, dream);
    EXPECT_EQ(s.field(), "sampler");
    EXPECT_THAT(s.message(), HasSubstr("the model is Dream (shifted prediction): it generates with sampler 'dream' or a "
                                       "Fast-dLLM Dream mode (dream_prefix_cache, dream_dual_cache, +threshold) only"));
  }
  for (auto arch : {checkpoint::Architecture::kLlada, checkpoint::Architecture::kLladaMoe,
                    checkpoint::Architecture::kLlada2Moe}) {
    checkpoint::LladaConfig other;
    other.architecture = arch;
    const Status s = ValidateSamplerForModel(SamplerMode::kDream, other);
    EXPECT_EQ(s.field(), "sampler");
    EXPECT_THAT(s.message(), HasSubstr(std::string("sampler 'dream' needs a Dream model; this model is ") +
                                       checkpoint::ArchitectureName(arch)));
  }
}

// Fast-dLLM's Dream modes: blocks as LLaDA's cached modes have them, Dream's options, no origin
// under the schedule, and Dream models only.
TEST(DreamParams, FastdllmsDreamModesTakeBlocksAndDreamsOptions) {
  const std::pair<const char*, SamplerMode> names[] = {
      {"dream_prefix_cache", SamplerMode::kDreamPrefixCache},
      {"dream_dual_cache", SamplerMode::kDreamDualCache},
      {"dream_prefix_cache+threshold", SamplerMode::kDreamPrefixCacheThreshold},
      {"dream_dual_cache+threshold", SamplerMode::kDreamDualCacheThreshold}};
  checkpoint::LladaConfig dream;
  dream.architecture = checkpoint::Architecture::kDream;
  for (const auto& [name, mode] : names) {
    SCOPED_TRACE(name);
    EXPECT_EQ(*ParseSamplerMode(name), mode);
    EXPECT_STREQ(SamplerModeName(mode), name);
    EXPECT_TRUE(IsDreamFamily(mode));
    EXPECT_TRUE(ValidateSamplerForModel(mode, dream).ok());
    EXPECT_EQ(ValidateSamplerForModel(mode, checkpoint::LladaConfig{}).field(), "sampler");
    GenerationParams p;
    p.sampler = mode;
    ResolveLengths(64, std::nullopt, std::nullopt, p);
    EXPECT_EQ(p.block_length, 32);
    EXPECT_EQ(p.steps, 64);
    p.alg = DreamAlg::kMaskgitPlus;
    p.top_p = 0.95;
    EXPECT_TRUE(ValidateFields(p).ok()) << ValidateFields(p).ToString();
    p.block_length = 24;
    EXPECT_EQ(ValidateFields(p).field(), "block_length");
    p.block_length = 32;
    p.alg = DreamAlg::kOrigin;
    const bool threshold = std::string(name).find("threshold") != std::string::npos;
    EXPECT_EQ(ValidateFields(p).ok(), threshold) << "origin: only the threshold rule ignores alg";
    if (!threshold) {
      EXPECT_THAT(ValidateFields(p).message(), HasSubstr("alg: sampler '" + std::string(name) +
                                                         "' takes maskgit_plus, topk_margin or entropy"));
    }
  }
  EXPECT_FALSE(IsDreamFamily(SamplerMode::kDualCacheThreshold));
}

// Fast-dLLM's Dream sampler without a cache: no blocks (as dream), its steps over the whole
// generation, Dream's options, no origin under the schedule, Dream models only.
TEST(DreamParams, FastdllmsUncachedDreamModesHaveNoBlocks) {
  const std::pair<const char*, SamplerMode> names[] = {{"dream_fastdllm", SamplerMode::kDreamFastdllm},
                                                       {"dream_fastdllm+threshold", SamplerMode::kDreamFastdllmThreshold}};
  checkpoint::LladaConfig dream;
  dream.architecture = checkpoint::Architecture::kDream;
  for (const auto& [name, mode] : names) {
    SCOPED_TRACE(name);
    EXPECT_EQ(*ParseSamplerMode(name), mode);
    EXPECT_STREQ(SamplerModeName(mode), name);
    EXPECT_TRUE(IsDreamFamily(mode));
    EXPECT_TRUE(HasNoBlocks(mode));
    EXPECT_TRUE(ValidateSamplerForModel(mode, dream).ok());
    EXPECT_EQ(ValidateSamplerForModel(mode, checkpoint::LladaConfig{}).field(), "sampler");
    GenerationParams p;
    p.sampler = mode;
    ResolveLengths(4, std::nullopt, 10, p);  // more steps than tokens: steps that commit nothing are dropped
    EXPECT_EQ(p.block_length, 4);
    EXPECT_EQ(p.steps, 10);
    EXPECT_TRUE(ValidateFields(p).ok()) << ValidateFields(p).ToString();
    p.block_length = 2;
    EXPECT_EQ(ValidateFields(p).field(), "block_length");
    EXPECT_THAT(ValidateFields(p).message(), HasSubstr("sampler '" + std::string(name) + "' has no blocks"));
    p.block_length = 4;
    p.alg = DreamAlg::kOrigin;
    EXPECT_EQ(ValidateFields(p).ok(), mode == SamplerMode::kDreamFastdllmThreshold);
  }
  EXPECT_FALSE(HasNoBlocks(SamplerMode::kDreamDualCache));
  EXPECT_TRUE(HasNoBlocks(SamplerMode::kDream));
}

TEST(DreamParams, TheProtoDoorTakesTheModelsDefaultAndItsOptions) {
  v1::GenerationParams wire;
  wire.set_gen_length(48);
  wire.set_alg("topk_margin");
  wire.set_alg_temp(0.25);
  wire.set_eps(0.01);
  wire.set_top_p(0.9);
  auto p = ParamsFromProto(wire, SamplerMode::kDream);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->sampler, SamplerMode::kDream);
  EXPECT_EQ(p->block_length, 48);
  EXPECT_EQ(p->steps, 48);
  EXPECT_EQ(p->alg, DreamAlg::kTopkMargin);
  EXPECT_EQ(p->alg_temp, 0.25);
  EXPECT_EQ(p->eps, 0.01);
  EXPECT_EQ(p->top_p, 0.9);
  // Round trip: what runs is what the wire says.
  auto back = ParamsFromProto(ParamsToProto(*p), SamplerMode::kReference);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->sampler, SamplerMode::kDream);
  EXPECT_EQ(back->alg, DreamAlg::kTopkMargin);
  EXPECT_EQ(back->eps, 0.01);
  // An unknown alg, and Dream's options on a request for another mode, are named under params.
  wire.set_alg("fastest");
  EXPECT_EQ(ParamsFromProto(wire, SamplerMode::kDream).status().field(), "params.alg");
  v1::GenerationParams llada;
  llada.set_sampler("reference");
  llada.set_eps(0.5);
  EXPECT_EQ(ParamsFromProto(llada).status().field(), "params.eps");
  // A door that does not know the model yet: Dream's options mean dream, and its errors are dream's.
  v1::GenerationParams open;
  open.set_alg("origin");
  EXPECT_TRUE(CheckParamsProto(open).ok());
  open.set_eps(2);
  const Status s = CheckParamsProto(open);
  EXPECT_EQ(s.field(), "params.eps") << s.ToString();
}

}  // namespace
}  // namespace unmask::generation
