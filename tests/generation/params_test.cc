// The generation library: one default per field, every bad value refused naming its field, the
// sampler modes, and the round trip through the proto.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "common/generation/field_names.h"
#include "common/generation/params.h"
#include "common/generation/params_proto.h"
#include "common/generation/validate.h"

namespace unmask::generation {
namespace {

using ::testing::HasSubstr;

TEST(Defaults, LengthsLeftOutGetOneDefaultEach) {
  GenerationParams p;
  ResolveLengths(std::nullopt, std::nullopt, std::nullopt, p);
  EXPECT_EQ(p.gen_length, 128);
  EXPECT_EQ(p.block_length, 32);
  EXPECT_EQ(p.steps, 128);
  // The struct's own defaults are the same request.
  GenerationParams plain;
  EXPECT_EQ(plain.gen_length, p.gen_length);
  EXPECT_EQ(plain.block_length, p.block_length);
  EXPECT_EQ(plain.steps, p.steps);
  EXPECT_TRUE(ValidateFields(plain).ok());
}

TEST(Defaults, BlockLengthIsTheLargestDivisorOfGenLengthUpTo32) {
  const std::pair<std::int64_t, std::int64_t> cases[] = {{64, 32}, {48, 24}, {100, 25}, {7, 7}, {1, 1}, {97, 1}, {256, 32}};
  for (auto [gen, block] : cases) {
    GenerationParams p;
    ResolveLengths(gen, std::nullopt, std::nullopt, p);
    EXPECT_EQ(p.block_length, block) << "gen_length " << gen;
    EXPECT_EQ(p.steps, gen);
    EXPECT_TRUE(ValidateFields(p).ok()) << "gen_length " << gen;
  }
}

TEST(Defaults, GivenLengthsAreKeptAsGiven) {
  GenerationParams p;
  ResolveLengths(64, 64, 16, p);
  EXPECT_EQ(p.gen_length, 64);
  EXPECT_EQ(p.block_length, 64);
  EXPECT_EQ(p.steps, 16);
  ResolveLengths(0, -3, 0, p);  // judged by ValidateFields, not changed here
  EXPECT_EQ(p.gen_length, 0);
  EXPECT_EQ(p.block_length, -3);
}

TEST(Validate, EveryBadValueNamesItsField) {
  const checkpoint::LladaConfig config;
  struct Case {
    std::function<void(GenerationParams&)> edit;
    const char* field;
    const char* says;
  } cases[] = {
      {[](auto& p) { p.gen_length = 0; }, "gen_length", "must be in [1, 16384], got 0"},
      {[](auto& p) { p.gen_length = kMaxGenLength + 32; p.block_length = 32; }, "gen_length", "must be in [1, 16384]"},
      {[](auto& p) { p.block_length = -4; }, "block_length", "must be >= 1, got -4"},
      {[](auto& p) { p.gen_length = 100; p.block_length = 32; p.steps = 100; }, "block_length", "must divide gen_length (100), got 32"},
      {[](auto& p) { p.steps = 0; }, "steps", "must be >= 1, got 0"},
      {[](auto& p) { p.steps = 30; }, "steps", "must be a multiple of the number of blocks (gen_length / block_length = 4), got 30"},
      {[](auto& p) { p.steps = 256; }, "steps", "must be <= gen_length (128), got 256"},
      {[](auto& p) { p.temperature = -0.5; }, "temperature", "must be in [0, 100] (0 = greedy), got -0.5"},
      {[](auto& p) { p.temperature = 1.0 / 0.0; }, "temperature", "must be in [0, 100]"},
      {[](auto& p) { p.cfg_scale = 101; }, "cfg_scale", "must be in [0, 100] (0 = off), got 101"},
      {[](auto& p) { p.threshold = 1.5; }, "threshold", "must be in [0, 1], got 1.5"},
      {[](auto& p) { p.factor = 0; }, "factor", "must be in (0, 1e+06], got 0"},
      {[](auto& p) { p.attention_query_chunk = -1; }, "attention_query_chunk", "must be in [0, 1048576]"},
      {[](auto& p) { p.mask_id = 1 << 20; }, "mask_id", "must be in the model's vocabulary [0, 126464), got 1048576"},
      {[](auto& p) { p.logits_eos_inf = true; p.eos_id = -1; }, "eos_id", "must be in the model's vocabulary [0, 126464), got -1"},
      {[](auto& p) { p.confidence_eos_eot_inf = true; p.eot_id = 1 << 20; }, "eot_id", "must be in the model's vocabulary [0, 126464), got 1048576"},
      {[](auto& p) { p.gen_length = 4096; p.block_length = 32; p.steps = 4096; }, "gen_length",
       "prompt length + gen_length (10 + 4096) exceeds the model's max_sequence_length (4096)"},
  };
  for (const auto& c : cases) {
    GenerationParams p;
    c.edit(p);
    Status s = ValidateParams(p, config, 10);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.says;
    EXPECT_EQ(s.field(), c.field) << s.message();
    EXPECT_THAT(s.message(), HasSubstr(std::string(c.field) + ": " + c.says));
  }
}

TEST(Validate, EosIdsOutsideTheVocabularyAreFineWithoutTheEosSwitches) {
  checkpoint::LladaConfig config;
  config.embedding_size = 1000;
  GenerationParams p;
  p.mask_id = 999;  // eos_id / eot_id stay LLaDA-8B's, outside this vocabulary
  EXPECT_TRUE(ValidateParams(p, config, 10).ok());
}

TEST(Validate, FastOptions) {
  FastOptions o;
  EXPECT_TRUE(ValidateFastOptions(o).ok());
  o.factor = -1;
  EXPECT_EQ(ValidateFastOptions(o).field(), "factor");
  o = {};
  o.threshold = std::nan("");
  EXPECT_EQ(ValidateFastOptions(o).field(), "threshold");
}

TEST(SamplerModes, EveryModeParsesFromItsNameAndHasItsOptions) {
  for (SamplerMode m : AllSamplerModes()) {
    auto parsed = ParseSamplerMode(SamplerModeName(m));
    ASSERT_TRUE(parsed.ok()) << SamplerModeName(m);
    EXPECT_EQ(*parsed, m);
  }
  EXPECT_EQ(*ParseSamplerMode("block_logits+threshold"), SamplerMode::kThreshold);
  auto bad = ParseSamplerMode("fastest");
  EXPECT_EQ(bad.status().field(), "sampler");
  EXPECT_THAT(bad.status().message(), HasSubstr("'fastest' is not one of reference, block_logits"));
  GenerationParams p;
  p.sampler = SamplerMode::kDualCacheFactor;
  p.factor = 2;
  p.early_stop = false;
  FastOptions o = FastOptionsOf(p);
  EXPECT_EQ(o.cache, CacheKind::kDual);
  EXPECT_EQ(o.rule, DecodeRule::kFactor);
  EXPECT_EQ(o.factor, 2);
  EXPECT_FALSE(o.early_stop);
}

TEST(Remasking, ParsesItsTwoNames) {
  EXPECT_EQ(*ParseRemasking("random"), Remasking::kRandom);
  EXPECT_EQ(*ParseRemasking("low_confidence"), Remasking::kLowConfidence);
  auto bad = ParseRemasking("top_k");
  EXPECT_EQ(bad.status().field(), "remasking");
  EXPECT_THAT(bad.status().message(), HasSubstr("'top_k' is not one of low_confidence, random"));
}

TEST(FieldNames, RenamingAFieldRenamesItInTheMessageAndDetail) {
  Status s = InvalidFieldError("steps", "must be >= 1, got 0").WithReason("R");
  Status r = RenameField(s, "--steps");
  EXPECT_EQ(r.message(), "--steps: must be >= 1, got 0");
  EXPECT_EQ(r.field(), "--steps");
  EXPECT_EQ(r.reason(), "R");
  Status other = RenameField(InvalidArgumentError("something else").WithField("steps"), "max_tokens");
  EXPECT_EQ(other.message(), "something else");  // the message did not lead with the field
  EXPECT_EQ(other.field(), "max_tokens");
  EXPECT_EQ(RenameField(InvalidArgumentError("no field"), "x").detail(), nullptr);
}

TEST(Proto, AnEmptyMessageIsTheDefaults) {
  auto p = ParamsFromProto(v1::GenerationParams());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  GenerationParams d;
  EXPECT_EQ(p->gen_length, d.gen_length);
  EXPECT_EQ(p->block_length, d.block_length);
  EXPECT_EQ(p->steps, d.steps);
  EXPECT_EQ(p->sampler, SamplerMode::kReference);
  EXPECT_EQ(p->threshold, d.threshold);
  EXPECT_EQ(p->factor, d.factor);
  EXPECT_TRUE(p->early_stop);
  EXPECT_FALSE(p->stop_at_eos);
}

TEST(Proto, RoundTripKeepsEveryField) {
  GenerationParams p;
  p.gen_length = 64;
  p.block_length = 16;
  p.steps = 32;
  p.temperature = 0.5;
  p.cfg_scale = 1.5;
  p.remasking = Remasking::kRandom;
  p.logits_eos_inf = true;
  p.confidence_eos_eot_inf = true;
  p.seed = 1234567890123ULL;
  p.sampler = SamplerMode::kPrefixCacheThreshold;
  p.threshold = 0.7;
  p.factor = 3;
  p.early_stop = false;
  p.stop_at_eos = true;
  p.attention_query_chunk = 64;
  const v1::GenerationParams wire = ParamsToProto(p);
  EXPECT_TRUE(wire.has_gen_length() && wire.has_block_length() && wire.has_steps() && wire.has_early_stop());
  EXPECT_EQ(wire.sampler(), "prefix_cache+threshold");
  auto back = ParamsFromProto(wire);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->gen_length, 64);
  EXPECT_EQ(back->block_length, 16);
  EXPECT_EQ(back->steps, 32);
  EXPECT_EQ(back->temperature, 0.5);
  EXPECT_EQ(back->cfg_scale, 1.5);
  EXPECT_EQ(back->remasking, Remasking::kRandom);
  EXPECT_TRUE(back->logits_eos_inf);
  EXPECT_TRUE(back->confidence_eos_eot_inf);
  EXPECT_EQ(back->seed, 1234567890123ULL);
  EXPECT_EQ(back->sampler, SamplerMode::kPrefixCacheThreshold);
  EXPECT_EQ(back->threshold, 0.7);
  EXPECT_EQ(back->factor, 3);
  EXPECT_FALSE(back->early_stop);
  EXPECT_TRUE(back->stop_at_eos);
  EXPECT_EQ(back->attention_query_chunk, 64);
  EXPECT_EQ(ParamsToProto(*back).SerializeAsString(), wire.SerializeAsString());
}

TEST(Proto, BadValuesNameTheirParamsField) {
  struct Case {
    std::function<void(v1::GenerationParams&)> edit;
    const char* field;
  } cases[] = {
      {[](auto& p) { p.set_gen_length(0); }, "params.gen_length"},
      {[](auto& p) { p.set_block_length(-1); }, "params.block_length"},
      {[](auto& p) { p.set_steps(1000); }, "params.steps"},
      {[](auto& p) { p.set_temperature(-1); }, "params.temperature"},
      {[](auto& p) { p.set_cfg_scale(1e9); }, "params.cfg_scale"},
      {[](auto& p) { p.set_remasking(static_cast<v1::Remasking>(7)); }, "params.remasking"},
      {[](auto& p) { p.set_sampler("fastest"); }, "params.sampler"},
      {[](auto& p) { p.set_threshold(2); }, "params.threshold"},
      {[](auto& p) { p.set_factor(-2); }, "params.factor"},
      {[](auto& p) { p.set_attention_query_chunk(-8); }, "params.attention_query_chunk"},
  };
  for (const auto& c : cases) {
    v1::GenerationParams wire;
    c.edit(wire);
    auto p = ParamsFromProto(wire);
    ASSERT_FALSE(p.ok()) << c.field;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(p.status().field(), c.field);
    EXPECT_EQ(p.status().message().rfind(std::string(c.field) + ": ", 0), 0u) << p.status().message();
  }
}

}  // namespace
}  // namespace unmask::generation
