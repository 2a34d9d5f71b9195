// The llada2 sampler mode's parameters (issue 29): its defaults (block 32, steps per block, threshold
// 0.95, the model's default mode), its own options refused elsewhere, the LLaDA switches it lacks
// refused there, the architecture check, the canvas padded to whole blocks, and the proto door.
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

checkpoint::LladaConfig ConfigOf(checkpoint::Architecture arch) {
  checkpoint::LladaConfig c;
  c.architecture = arch;
  return c;
}

GenerationParams Llada2() {
  GenerationParams p;
  p.sampler = SamplerMode::kLlada2;
  ResolveLengths(std::nullopt, std::nullopt, std::nullopt, p);
  ResolveThreshold(std::nullopt, p);
  return p;
}

TEST(Llada2Params, DefaultsAreTheOfficialGenerates) {
  const GenerationParams p = Llada2();
  EXPECT_EQ(p.gen_length, 128);
  EXPECT_EQ(p.block_length, 32);
  EXPECT_EQ(p.steps, 32);  // per block
  EXPECT_EQ(p.threshold, 0.95);
  EXPECT_EQ(p.minimal_topk, 1);
  EXPECT_EQ(p.top_k, 0);
  EXPECT_EQ(p.top_p, 1.0);
  EXPECT_FALSE(p.eos_early_stop);
  EXPECT_TRUE(ValidateFields(p).ok());
  // A gen_length 32 does not divide: the block stays 32 (LLaDA's modes would pick 25 for 100).
  GenerationParams q;
  q.sampler = SamplerMode::kLlada2;
  ResolveLengths(100, std::nullopt, std::nullopt, q);
  EXPECT_EQ(q.block_length, 32);
  EXPECT_EQ(q.steps, 32);
  EXPECT_TRUE(ValidateFields(q).ok()) << ValidateFields(q).ToString();
  // The other modes keep theirs.
  GenerationParams r;
  ResolveThreshold(std::nullopt, r);
  EXPECT_EQ(r.threshold, 0.9);
  ResolveThreshold(0.5, q);
  EXPECT_EQ(q.threshold, 0.5);
}

TEST(Llada2Params, TheDefaultModeIsTheModelsOwn) {
  EXPECT_EQ(DefaultSampler(ConfigOf(checkpoint::Architecture::kLlada2Moe)), SamplerMode::kLlada2);
  EXPECT_EQ(DefaultSampler(ConfigOf(checkpoint::Architecture::kLladaMoe)), SamplerMode::kReference);
  EXPECT_EQ(DefaultSampler(ConfigOf(checkpoint::Architecture::kLlada)), SamplerMode::kReference);
  auto llada21 = ConfigOf(checkpoint::Architecture::kLlada2Moe);
  llada21.token_editing = true;  // model_type llada21_moe
  EXPECT_EQ(DefaultSampler(llada21), SamplerMode::kLlada21);
  EXPECT_EQ(*ParseSamplerMode("llada21"), SamplerMode::kLlada21);
  EXPECT_TRUE(IsBlockDiffusion(SamplerMode::kLlada21));
  EXPECT_FALSE(IsBlockDiffusion(SamplerMode::kDualCache));
  EXPECT_EQ(*ParseSamplerMode("llada2"), SamplerMode::kLlada2);
  EXPECT_STREQ(SamplerModeName(SamplerMode::kLlada2), "llada2");
  CacheKind cache;
  DecodeRule rule;
  EXPECT_FALSE(FastModeOf(SamplerMode::kLlada2, &cache, &rule));
}

TEST(Llada2Params, EveryBadValueNamesItsField) {
  struct Case {
    std::function<void(GenerationParams&)> edit;
    const char* field;
    const char* says;
  } cases[] = {
      {[](auto& p) { p.minimal_topk = 0; }, "minimal_topk", "must be in [1, gen_length (128)], got 0"},
      {[](auto& p) { p.minimal_topk = 129; }, "minimal_topk", "must be in [1, gen_length (128)], got 129"},
      {[](auto& p) { p.top_k = -1; }, "top_k", "must be >= 0 (0 = off), got -1"},
      {[](auto& p) { p.top_p = 0; }, "top_p", "must be in (0, 1] (1 = off), got 0"},
      {[](auto& p) { p.top_p = 1.5; }, "top_p", "must be in (0, 1] (1 = off), got 1.5"},
      {[](auto& p) { p.top_p = std::nan(""); }, "top_p", "must be in (0, 1]"},
      {[](auto& p) { p.threshold = -0.1; }, "threshold", "must be in [0, 1]"},
      {[](auto& p) { p.steps = 0; }, "steps", "must be >= 1, got 0"},
      {[](auto& p) { p.steps = kMaxGenLength + 1; }, "steps", "must be <= 16384 (llada2: steps per block)"},
      {[](auto& p) { p.block_length = 0; }, "block_length", "must be >= 1, got 0"},
      {[](auto& p) { p.cfg_scale = 1; }, "cfg_scale", "sampler 'llada2' has no classifier-free guidance"},
      {[](auto& p) { p.remasking = Remasking::kRandom; }, "remasking", "sampler 'llada2' commits the most confident"},
      {[](auto& p) { p.logits_eos_inf = true; }, "logits_eos_inf", "sampler 'llada2' has no such switch"},
      {[](auto& p) { p.confidence_eos_eot_inf = true; }, "confidence_eos_eot_inf", "sampler 'llada2' has no such switch"},
      {[](auto& p) { p.early_stop = false; }, "early_stop", "sampler 'llada2' always ends after the block that holds an EOS"},
  };
  for (const auto& c : cases) {
    GenerationParams p = Llada2();
    c.edit(p);
    const Status s = ValidateFields(p);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.says;
    EXPECT_EQ(s.field(), c.field) << s.message();
    EXPECT_THAT(s.message(), HasSubstr(std::string(c.field) + ": " + c.says));
  }
  // What LLaDA's modes would refuse is fine here: block 32 not dividing 100, steps above gen_length.
  GenerationParams p = Llada2();
  p.gen_length = 100;
  p.steps = 200;
  EXPECT_TRUE(ValidateFields(p).ok()) << ValidateFields(p).ToString();
}

TEST(Llada2Params, TheOtherModesRefuseItsOptions) {
  const std::string llada2 = "only samplers 'llada2' and 'llada21' (LLaDA2's block diffusion) use it";
  const std::string sampling = "only samplers 'llada2', 'llada21' (LLaDA2's block diffusion) and 'dream' use it";
  struct Case {
    std::function<void(GenerationParams&)> edit;
    const char* field;
    std::string users;
  } cases[] = {
      {[](auto& p) { p.minimal_topk = 2; }, "minimal_topk", llada2},
      {[](auto& p) { p.top_k = 5; }, "top_k", sampling},
      {[](auto& p) { p.top_p = 0.9; }, "top_p", sampling},
      {[](auto& p) { p.eos_early_stop = true; }, "eos_early_stop", llada2},
  };
  for (SamplerMode mode : {SamplerMode::kReference, SamplerMode::kDualCacheThreshold}) {
    for (const auto& c : cases) {
      GenerationParams p;
      p.sampler = mode;
      c.edit(p);
      const Status s = ValidateFields(p);
      EXPECT_EQ(s.field(), c.field) << s.ToString();
      EXPECT_THAT(s.message(), HasSubstr(c.users + "; sampler '" + std::string(SamplerModeName(mode)) +
                                         "' has no such option"));
    }
  }
}

TEST(Llada2Params, Llada21TakesTheBlockDiffusionRulesAndItsEditingOptions) {
  GenerationParams p;
  p.sampler = SamplerMode::kLlada21;
  ResolveLengths(100, std::nullopt, std::nullopt, p);
  ResolveThreshold(std::nullopt, p);
  EXPECT_EQ(p.block_length, 32);
  EXPECT_EQ(p.steps, 32);
  EXPECT_EQ(p.threshold, 0.95);
  EXPECT_EQ(p.editing_threshold, 0.9);
  EXPECT_EQ(p.max_post_steps, 16);
  EXPECT_EQ(p.num_to_transfer, 1);
  EXPECT_TRUE(ValidateFields(p).ok()) << ValidateFields(p).ToString();
  p.max_post_steps = 0;      // no post step: a legitimate value
  p.editing_threshold = 0;   // edit whatever changed
  EXPECT_TRUE(ValidateFields(p).ok()) << ValidateFields(p).ToString();
  struct Case {
    std::function<void(GenerationParams&)> edit;
    const char* field;
    const char* says;
  } cases[] = {
      {[](auto& q) { q.editing_threshold = 1.5; }, "editing_threshold", "must be in [0, 1], got 1.5"},
      {[](auto& q) { q.max_post_steps = -1; }, "max_post_steps", "must be in [0, 1024], got -1"},
      {[](auto& q) { q.num_to_transfer = 0; }, "num_to_transfer", "must be in [1, block_length (32)], got 0"},
      {[](auto& q) { q.num_to_transfer = 33; }, "num_to_transfer", "must be in [1, block_length (32)], got 33"},
      {[](auto& q) { q.cfg_scale = 2; }, "cfg_scale", "sampler 'llada21' has no classifier-free guidance"},
      {[](auto& q) { q.top_p = 0; }, "top_p", "must be in (0, 1]"},
  };
  for (const auto& c : cases) {
    GenerationParams q = p;
    c.edit(q);
    const Status s = ValidateFields(q);
    EXPECT_EQ(s.field(), c.field) << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr(std::string(c.field) + ": " + c.says));
  }
  // Its editing options are refused by every other mode, llada2 included.
  for (SamplerMode mode : {SamplerMode::kLlada2, SamplerMode::kReference}) {
    GenerationParams q;
    q.sampler = mode;
    q.max_post_steps = 4;
    EXPECT_EQ(ValidateFields(q).field(), "max_post_steps");
    EXPECT_THAT(ValidateFields(q).message(), HasSubstr("only sampler 'llada21' (LLaDA2.1's token editing) uses it"));
  }
  // Through the proto: unset means the default, 0 is a value.
  v1::GenerationParams wire;
  wire.set_sampler("llada21");
  wire.set_max_post_steps(0);
  wire.set_editing_threshold(0.5);
  wire.set_num_to_transfer(2);
  auto back = ParamsFromProto(wire);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->max_post_steps, 0);
  EXPECT_EQ(back->editing_threshold, 0.5);
  EXPECT_EQ(back->num_to_transfer, 2);
  EXPECT_EQ(ParamsToProto(*back).SerializeAsString(), ParamsToProto(*ParamsFromProto(ParamsToProto(*back))).SerializeAsString());
  // An unnamed mode with editing options is judged as llada21 where every mode refuses it.
  wire.clear_sampler();
  wire.set_num_to_transfer(-1);
  EXPECT_EQ(CheckParamsProto(wire).field(), "params.num_to_transfer");
  EXPECT_THAT(CheckParamsProto(wire).message(), HasSubstr("must be in [1, block_length (32)], got -1"));
}

TEST(Llada2Params, TheModelsArchitectureChoosesTheModes) {
  const auto llada2 = ConfigOf(checkpoint::Architecture::kLlada2Moe);
  const auto moe = ConfigOf(checkpoint::Architecture::kLladaMoe);
  EXPECT_TRUE(ValidateSamplerForModel(SamplerMode::kLlada2, llada2).ok());
  Status s = ValidateSamplerForModel(SamplerMode::kDualCache, llada2);
  EXPECT_EQ(s.field(), "sampler");
  EXPECT_THAT(s.message(), HasSubstr("the model is LLaDA2 (block-causal attention): it generates with sampler 'llada2' "
                                     "or 'llada21' only, got 'dual_cache'"));
  EXPECT_TRUE(ValidateSamplerForModel(SamplerMode::kLlada21, llada2).ok());
  EXPECT_THAT(ValidateSamplerForModel(SamplerMode::kLlada21, moe).message(), HasSubstr("sampler 'llada21' needs an LLaDA2"));
  s = ValidateSamplerForModel(SamplerMode::kLlada2, moe);
  EXPECT_EQ(s.field(), "sampler");
  EXPECT_THAT(s.message(), HasSubstr("sampler 'llada2' needs an LLaDA2 model (block-causal attention); this model is LLaDA-MoE"));
  EXPECT_THAT(ValidateSamplerForModel(SamplerMode::kLlada2, checkpoint::LladaConfig()).message(),
              HasSubstr("this model is LLaDA:"));
}

TEST(Llada2Params, TheCanvasIsPaddedToWholeBlocks) {
  auto config = ConfigOf(checkpoint::Architecture::kLlada2Moe);
  config.max_sequence_length = 128;
  GenerationParams p = Llada2();
  p.mask_id = 5;
  p.gen_length = 60;
  EXPECT_EQ(SequenceLength(p, 40), 128);  // 100 tokens, 4 blocks of 32
  EXPECT_TRUE(ValidateParams(p, config, 40).ok());
  EXPECT_EQ(SequenceLength(p, 70), 160);  // 130 tokens, 5 blocks
  const Status s = ValidateParams(p, config, 70);
  EXPECT_EQ(s.field(), "gen_length");
  EXPECT_THAT(s.message(), HasSubstr("prompt length + gen_length (70 + 60), padded to whole blocks of block_length "
                                     "(160), exceeds the model's max_sequence_length (128)"));
  GenerationParams q;  // LLaDA's modes do not pad
  q.gen_length = 60;
  q.block_length = 30;
  q.steps = 60;
  EXPECT_EQ(SequenceLength(q, 40), 100);
}

TEST(Llada2Params, TheProtoDoorTakesTheModelsDefaultAndItsOptions) {
  v1::GenerationParams wire;
  auto p = ParamsFromProto(wire, SamplerMode::kLlada2);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->sampler, SamplerMode::kLlada2);
  EXPECT_EQ(p->block_length, 32);
  EXPECT_EQ(p->steps, 32);
  EXPECT_EQ(p->threshold, 0.95);
  EXPECT_EQ(p->minimal_topk, 1);
  EXPECT_EQ(p->top_p, 1.0);
  wire.set_minimal_topk(4);
  wire.set_top_k(20);
  wire.set_top_p(0.8);
  wire.set_eos_early_stop(true);
  wire.set_temperature(0.7);
  wire.set_gen_length(100);
  p = ParamsFromProto(wire, SamplerMode::kLlada2);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->minimal_topk, 4);
  EXPECT_EQ(p->top_k, 20);
  EXPECT_EQ(p->top_p, 0.8);
  EXPECT_TRUE(p->eos_early_stop);
  auto back = ParamsFromProto(ParamsToProto(*p));  // the sampler travels by name
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ParamsToProto(*back).SerializeAsString(), ParamsToProto(*p).SerializeAsString());
  // Without the model's default the same options are refused by the reference, named.
  auto as_reference = ParamsFromProto(wire);
  EXPECT_EQ(as_reference.status().field(), "params.minimal_topk");
  // A door that does not know the model yet lets it through (valid for llada2) ...
  EXPECT_TRUE(CheckParamsProto(wire).ok());
  // ... but not what neither default takes (said as llada2 would: the request sets its options),
  // nor llada2's options under a named LLaDA mode.
  wire.set_top_p(2);
  EXPECT_EQ(CheckParamsProto(wire).field(), "params.top_p");
  EXPECT_THAT(CheckParamsProto(wire).message(), HasSubstr("must be in (0, 1] (1 = off), got 2"));
  wire.set_top_p(0.8);
  wire.set_sampler("dual_cache");
  EXPECT_EQ(CheckParamsProto(wire).field(), "params.minimal_topk");
  v1::GenerationParams bad;
  bad.set_sampler("llada2");
  bad.set_top_k(-3);
  EXPECT_EQ(ParamsFromProto(bad).status().field(), "params.top_k");
}

}  // namespace
}  // namespace unmask::generation
