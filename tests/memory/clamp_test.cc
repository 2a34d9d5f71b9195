#include "common/memory/clamp.h"

#include <gtest/gtest.h>

#include <set>

namespace unmask::memory {
namespace {

using checkpoint::LladaConfig;

LladaConfig SmallConfig() {
  LladaConfig c;
  c.d_model = 256;
  c.n_heads = c.n_kv_heads = 4;
  c.n_layers = 4;
  c.mlp_hidden_size = 768;
  return c;
}

GenerationRequest Ask(std::int64_t prompt, std::int64_t gen, std::int64_t block, std::int64_t steps,
                      const std::string& sampler = "reference") {
  GenerationRequest r;
  r.prompt_length = prompt;
  r.gen_length = gen;
  r.block_length = block;
  r.steps = steps;
  r.sampler = sampler;
  return r;
}

// Everything the request needs with these weights: the budget at which it just fits.
std::uint64_t Needs(const LladaConfig& config, const GenerationRequest& r, std::uint64_t weights) {
  RequestShape s = *ShapeOf(r);
  s.weights_bytes = weights;
  return EstimateRequest(config, s).total();
}

std::set<std::string> Fields(const ClampResult& r) {
  std::set<std::string> out;
  for (const auto& a : r.adjustments) out.insert(a.field);
  return out;
}

const Adjustment* Find(const ClampResult& r, const std::string& field) {
  for (const auto& a : r.adjustments)
    if (a.field == field) return &a;
  return nullptr;
}

void ExpectSame(const GenerationRequest& a, const GenerationRequest& b) {
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.prompt_length, b.prompt_length);
  EXPECT_EQ(a.gen_length, b.gen_length);
  EXPECT_EQ(a.block_length, b.block_length);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.temperature, b.temperature);
  EXPECT_EQ(a.cfg_scale, b.cfg_scale);
  EXPECT_EQ(a.sampler, b.sampler);
  EXPECT_EQ(a.compute_dtype_bytes, b.compute_dtype_bytes);
  EXPECT_EQ(a.attention_query_chunk, b.attention_query_chunk);
}

constexpr std::uint64_t kWeights = 1ull << 30;
constexpr ClampPolicy kPolicies[] = {ClampPolicy::kOff, ClampPolicy::kStandard, ClampPolicy::kExtreme};

TEST(ClampPolicy, ParsesTheThreeNames) {
  for (ClampPolicy p : kPolicies) EXPECT_EQ(*ParseClampPolicy(ClampPolicyName(p)), p);
  EXPECT_EQ(*ParseClampPolicy("Extreme"), ClampPolicy::kExtreme);
  const auto bad = ParseClampPolicy("aggressive");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'aggressive'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("off, standard, extreme"), std::string::npos);
  EXPECT_FALSE(ParseClampPolicy("").ok());
}

TEST(Clamp, ARequestThatFitsIsUntouchedUnderEveryPolicy) {
  const LladaConfig config = SmallConfig();
  GenerationRequest asked = Ask(32, 256, 32, 256);
  asked.temperature = 0.8;
  asked.cfg_scale = 1.0;
  const std::uint64_t budget = Needs(config, asked, kWeights);
  for (ClampPolicy p : kPolicies) {
    auto r = Clamp(config, asked, budget, kWeights, p);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ExpectSame(r->applied, asked);
    EXPECT_TRUE(r->adjustments.empty()) << ClampPolicyName(p);
    EXPECT_TRUE(r->fits);
    EXPECT_EQ(r->estimate.total(), budget);
  }
}

TEST(Clamp, OffChangesNothingButReportsWhatDoesNotFit) {
  const LladaConfig config = SmallConfig();
  const GenerationRequest asked = Ask(32, 256, 32, 256);
  const std::uint64_t needs = Needs(config, asked, kWeights);
  auto r = Clamp(config, asked, needs - 1, kWeights, ClampPolicy::kOff);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectSame(r->applied, asked);
  EXPECT_FALSE(r->fits);
  ASSERT_EQ(r->adjustments.size(), 1u);
  EXPECT_EQ(r->adjustments[0].field, "memory");
  EXPECT_EQ(r->adjustments[0].asked, r->adjustments[0].applied);
  EXPECT_NE(r->adjustments[0].reason.find("policy off"), std::string::npos);
}

TEST(Clamp, OffRefusesAnOverLongRequest) {
  auto r = Clamp(SmallConfig(), Ask(4000, 256, 32, 256), ~0ull, 0, ClampPolicy::kOff);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("max_sequence_length (4096)"), std::string::npos);
}

TEST(Clamp, OverLongRequestsAreCutToMaxSequenceLength) {
  for (ClampPolicy p : {ClampPolicy::kStandard, ClampPolicy::kExtreme}) {
    auto r = Clamp(SmallConfig(), Ask(4000, 256, 32, 256), ~0ull, 0, p);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->applied.gen_length, 96);  // the largest multiple of 32 in the 96 tokens left
    EXPECT_EQ(r->applied.block_length, 32);
    EXPECT_EQ(r->applied.steps, 96);
    EXPECT_EQ(Fields(*r), (std::set<std::string>{"gen_length", "steps"}));
    const Adjustment* gen = Find(*r, "gen_length");
    EXPECT_EQ(gen->asked, "256");
    EXPECT_EQ(gen->applied, "96");
    EXPECT_NE(gen->reason.find("max_sequence_length"), std::string::npos);
    EXPECT_EQ(Find(*r, "steps")->asked, "256");
  }
  // A block longer than the room left: one block of what is left.
  auto r = Clamp(SmallConfig(), Ask(4000, 256, 128, 128), ~0ull, 0, ClampPolicy::kStandard);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->applied.gen_length, 96);
  EXPECT_EQ(r->applied.block_length, 96);
  EXPECT_EQ(r->applied.steps, 48);  // half a step per token, as asked
  EXPECT_EQ(Fields(*r), (std::set<std::string>{"gen_length", "block_length", "steps"}));
}

TEST(Clamp, StandardTakesTheLargestMultipleOfTheBlockThatFits) {
  const LladaConfig config = LladaConfig();
  GenerationRequest asked = Ask(128, 1024, 64, 1024);
  asked.compute_dtype_bytes = 2;
  GenerationRequest at512 = asked;
  at512.gen_length = 512;
  at512.steps = 512;
  const std::uint64_t budget = Needs(config, at512, kWeights) + 1000;
  auto r = Clamp(config, asked, budget, kWeights, ClampPolicy::kStandard);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->applied.gen_length, 512);
  EXPECT_EQ(r->applied.block_length, 64);
  EXPECT_EQ(r->applied.steps, 512);
  EXPECT_LE(r->estimate.total(), budget);
  GenerationRequest next = r->applied;
  next.gen_length += 64;
  EXPECT_GT(Needs(config, next, kWeights), budget);  // one more block would not fit
  EXPECT_EQ(Fields(*r), (std::set<std::string>{"gen_length", "steps"}));
  const Adjustment* gen = Find(*r, "gen_length");
  EXPECT_EQ(gen->asked, "1024");
  EXPECT_EQ(gen->applied, "512");
  EXPECT_NE(gen->reason.find("budget"), std::string::npos);
  EXPECT_NE(gen->reason.find("multiple of block_length 64"), std::string::npos);
}

TEST(Clamp, StepsKeepTheAskedStepsPerToken) {
  const LladaConfig config = SmallConfig();
  const GenerationRequest asked = Ask(32, 256, 32, 128);  // 16 steps per block of 32
  GenerationRequest half = asked;
  half.gen_length = 128;
  half.steps = 64;
  auto r = Clamp(config, asked, Needs(config, half, kWeights), kWeights, ClampPolicy::kStandard);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->applied.gen_length, 128);
  EXPECT_EQ(r->applied.steps, 64);
  EXPECT_EQ(Find(*r, "steps")->applied, "64");
}

TEST(Clamp, StandardShrinksTheBlockOfAFastModeBeforeTheLength) {
  const LladaConfig config = SmallConfig();
  const GenerationRequest asked = Ask(32, 256, 256, 256, "block_logits");
  GenerationRequest smaller = asked;
  smaller.block_length = 64;
  const std::uint64_t budget = Needs(config, smaller, kWeights);
  auto r = Clamp(config, asked, budget, kWeights, ClampPolicy::kStandard);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->applied.gen_length, 256);  // logits rows were the problem, not the length
  EXPECT_EQ(r->applied.block_length, 64);
  EXPECT_EQ(r->applied.steps, 256);
  EXPECT_EQ(Fields(*r), (std::set<std::string>{"block_length"}));
  EXPECT_NE(Find(*r, "block_length")->reason.find("not even one block of 256"), std::string::npos);
}

TEST(Clamp, StandardChangesOnlyLengths) {
  const LladaConfig config = SmallConfig();
  GenerationRequest asked = Ask(32, 512, 32, 512);
  asked.temperature = 1.0;
  asked.cfg_scale = 2.0;
  asked.attention_query_chunk = 0;
  const std::uint64_t budget = Needs(config, asked, kWeights) / 3 + kWeights;
  auto r = Clamp(config, asked, budget, kWeights, ClampPolicy::kStandard);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_LT(r->applied.gen_length, 512);
  EXPECT_EQ(r->applied.sampler, "reference");
  EXPECT_EQ(r->applied.temperature, 1.0);
  EXPECT_EQ(r->applied.cfg_scale, 2.0);
  EXPECT_EQ(r->applied.attention_query_chunk, 0);
  EXPECT_LE(r->estimate.total(), budget);
}

TEST(Clamp, ResourceExhaustedWhenEvenTheMinimumDoesNotFit) {
  const LladaConfig config = SmallConfig();
  const std::uint64_t budget = kWeights + 1000;
  for (ClampPolicy p : {ClampPolicy::kStandard, ClampPolicy::kExtreme}) {
    auto r = Clamp(config, Ask(32, 256, 32, 256), budget, kWeights, p);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
    const std::string m = r.status().message();
    EXPECT_NE(m.find("available"), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(budget) + " bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("needs"), std::string::npos) << m;
    EXPECT_NE(m.find("gen_length 16"), std::string::npos) << m;  // the default floor
    EXPECT_EQ(m.find("weights alone"), std::string::npos) << m;
  }
  auto r = Clamp(config, Ask(32, 256, 32, 256), kWeights - 1, kWeights, ClampPolicy::kExtreme);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exceed the budget: load the model at a smaller precision"), std::string::npos);
}

TEST(Clamp, NeverBelowTheMinimumGenLength) {
  const LladaConfig config = SmallConfig();
  const GenerationRequest asked = Ask(32, 256, 32, 256);
  GenerationRequest tiny = Ask(32, 12, 12, 12);
  const std::uint64_t budget = Needs(config, tiny, kWeights);
  ClampOptions options;
  options.min_gen_length = 16;
  auto refused = Clamp(config, asked, budget, kWeights, ClampPolicy::kStandard, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  options.min_gen_length = 8;
  auto r = Clamp(config, asked, budget, kWeights, ClampPolicy::kStandard, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->applied.gen_length, 12);  // no multiple of 32 fits: the longest length, one block
  EXPECT_EQ(r->applied.block_length, 12);
  EXPECT_EQ(r->applied.steps, 12);
  // A request shorter than the floor is never made longer, only refused or kept.
  auto short_ok = Clamp(config, tiny, budget, kWeights, ClampPolicy::kStandard);
  ASSERT_TRUE(short_ok.ok());
  EXPECT_EQ(short_ok->applied.gen_length, 12);
}

TEST(Clamp, ExtremeSwitchesToACacheModeWhereStandardMustCut) {
  const LladaConfig config = SmallConfig();
  const GenerationRequest asked = Ask(8, 256, 32, 256);
  GenerationRequest dual = asked;
  dual.sampler = "dual_cache";
  const std::uint64_t budget = Needs(config, dual, kWeights);
  auto standard = Clamp(config, asked, budget, kWeights, ClampPolicy::kStandard);
  ASSERT_TRUE(standard.ok());
  EXPECT_LT(standard->applied.gen_length, 256);
  auto extreme = Clamp(config, asked, budget, kWeights, ClampPolicy::kExtreme);
  ASSERT_TRUE(extreme.ok()) << extreme.status().ToString();
  EXPECT_EQ(extreme->applied.gen_length, 256);
  EXPECT_EQ(extreme->applied.sampler, "dual_cache");
  EXPECT_EQ(Fields(*extreme), (std::set<std::string>{"sampler"}));
  EXPECT_EQ(Find(*extreme, "sampler")->asked, "reference");
  EXPECT_NE(Find(*extreme, "sampler")->reason.find("current block only"), std::string::npos);
  EXPECT_LE(extreme->estimate.total(), budget);
}

TEST(Clamp, ExtremeFallsBackToBlockLogitsAndKeepsTheDecodingRule) {
  const LladaConfig config = SmallConfig();
  const GenerationRequest asked = Ask(32, 256, 32, 256, "prefix_cache+factor");
  GenerationRequest nocache = asked;
  nocache.sampler = "factor";
  const std::uint64_t budget = Needs(config, nocache, kWeights);
  ASSERT_LT(budget, Needs(config, asked, kWeights));
  auto r = Clamp(config, asked, budget, kWeights, ClampPolicy::kExtreme);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->applied.sampler, "factor");
  EXPECT_EQ(r->applied.gen_length, 256);
}

TEST(Clamp, ExtremeChunksAttentionWhereStandardCannotHelp) {
  // A long prompt: attention scores dominate and a shorter answer barely changes them.
  const LladaConfig config = LladaConfig();
  GenerationRequest asked = Ask(3072, 64, 32, 64, "dual_cache");
  asked.compute_dtype_bytes = 2;
  GenerationRequest chunked = asked;
  chunked.attention_query_chunk = 256;
  const std::uint64_t budget = Needs(config, chunked, kWeights);
  auto standard = Clamp(config, asked, budget, kWeights, ClampPolicy::kStandard);
  ASSERT_FALSE(standard.ok());
  EXPECT_EQ(standard.status().code(), StatusCode::kResourceExhausted);
  auto r = Clamp(config, asked, budget, kWeights, ClampPolicy::kExtreme);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // The largest power of two that fits (the MLP, not the scores, may then be the peak).
  const std::int64_t chunk = r->applied.attention_query_chunk;
  EXPECT_GE(chunk, 256);
  EXPECT_EQ(chunk & (chunk - 1), 0);
  GenerationRequest twice = r->applied;
  twice.attention_query_chunk = 2 * chunk;
  EXPECT_GT(Needs(config, twice, kWeights), budget);
  EXPECT_LE(r->estimate.total(), budget);
  EXPECT_EQ(r->applied.gen_length, 64);
  EXPECT_EQ(r->applied.sampler, "dual_cache");
  EXPECT_EQ(Fields(*r), (std::set<std::string>{"attention_query_chunk"}));
  EXPECT_EQ(Find(*r, "attention_query_chunk")->asked, "0");
}

TEST(Clamp, ExtremeDropsNoiseBeforeGuidanceAndOnlyWhatIsNeeded) {
  const LladaConfig config = SmallConfig();
  GenerationRequest asked = Ask(32, 128, 32, 128, "block_logits");
  asked.temperature = 1.0;
  asked.cfg_scale = 2.0;
  GenerationRequest greedy = asked;
  greedy.temperature = 0;
  auto r = Clamp(config, asked, Needs(config, greedy, kWeights), kWeights, ClampPolicy::kExtreme);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->applied.temperature, 0);
  EXPECT_EQ(r->applied.cfg_scale, 2.0);
  EXPECT_EQ(r->applied.gen_length, 128);
  EXPECT_EQ(Fields(*r), (std::set<std::string>{"temperature"}));
  EXPECT_EQ(Find(*r, "temperature")->asked, "1");

  GenerationRequest plain = greedy;
  plain.cfg_scale = 0;
  r = Clamp(config, asked, Needs(config, plain, kWeights), kWeights, ClampPolicy::kExtreme);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Fields(*r), (std::set<std::string>{"temperature", "cfg_scale"}));
  EXPECT_EQ(r->applied.gen_length, 128);
}

TEST(Clamp, ExtremeFitsTheSeedsSmallGpuSetting) {
  // LLaDA 8B with int4 weights on a 10 GiB budget, asking for a long reference generation.
  const LladaConfig config = LladaConfig();
  const std::uint64_t weights = *WeightBytes(config, *weights::PrecisionSpec::Parse("int4"));
  const std::uint64_t budget = 10ull << 30;
  GenerationRequest asked = Ask(512, 2048, 32, 2048);
  asked.compute_dtype_bytes = 2;
  asked.temperature = 0.5;
  asked.cfg_scale = 1.0;
  auto standard = Clamp(config, asked, budget, weights, ClampPolicy::kStandard);
  auto extreme = Clamp(config, asked, budget, weights, ClampPolicy::kExtreme);
  ASSERT_TRUE(standard.ok()) << standard.status().ToString();
  ASSERT_TRUE(extreme.ok()) << extreme.status().ToString();
  EXPECT_LE(standard->estimate.total(), budget);
  EXPECT_LE(extreme->estimate.total(), budget);
  // Extreme keeps more of the answer by computing less per token.
  EXPECT_GT(extreme->applied.gen_length, standard->applied.gen_length);
  EXPECT_NE(extreme->applied.sampler, "reference");
  for (const auto& a : extreme->adjustments) {
    EXPECT_FALSE(a.reason.empty()) << a.field;
    EXPECT_NE(a.asked, a.applied) << a.field;
  }
}

TEST(Clamp, RefusesMalformedRequests) {
  const LladaConfig config = SmallConfig();
  auto expect_invalid = [&](const GenerationRequest& r, const std::string& needle) {
    auto c = Clamp(config, r, ~0ull, 0, ClampPolicy::kStandard);
    ASSERT_FALSE(c.ok()) << needle;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().message();
  };
  expect_invalid(Ask(10, 100, 32, 100), "divisible by block_length");
  expect_invalid(Ask(10, 128, 32, 6), "number of blocks");
  expect_invalid(Ask(10, 128, 32, 256), "<= gen_length");
  expect_invalid(Ask(10, 128, 32, 128, "fastest"), "dual_cache");
  expect_invalid(Ask(4096, 16, 16, 16), "leaves no room");
  GenerationRequest r = Ask(10, 128, 32, 128);
  r.compute_dtype_bytes = 3;
  expect_invalid(r, "compute_dtype_bytes");
  r = Ask(10, 128, 32, 128);
  r.batch = 0;
  expect_invalid(r, "batch");
  r = Ask(10, 128, 32, 128);
  r.temperature = -1;
  expect_invalid(r, "temperature");
}

}  // namespace
}  // namespace unmask::memory
