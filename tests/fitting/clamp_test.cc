#include "common/fitting/clamp.h"

#include <gtest/gtest.h>

#include "tests/fixtures/tiny_config.h"

#include <ostream>
#include <set>

namespace unmask::generation {
// gtest prints a mode by its name.
inline void PrintTo(SamplerMode mode, std::ostream* os) { *os << SamplerModeName(mode); }
}  // namespace unmask::generation

namespace unmask::fitting {
namespace {

using checkpoint::LladaConfig;
using generation::SamplerMode;


GenerationRequest Ask(std::int64_t prompt, std::int64_t gen, std::int64_t block, std::int64_t steps,
                      SamplerMode sampler = SamplerMode::kReference) {
  GenerationRequest r;
  r.prompt_length = prompt;
  r.params.gen_length = gen;
  r.params.block_length = block;
  r.params.steps = steps;
  r.params.sampler = sampler;
  return r;
}

// The reference at temperature > 0 draws its noise over every position, so its logits, the
// largest phase on these configs, grow with gen_length. (Greedy, it computes the current block's
// logits only, and its peak hardly moves with the length.)
GenerationRequest Sampled(GenerationRequest r) {
  r.params.temperature = 0.7;
  return r;
}

// Everything the request needs with these weights: the budget at which it just fits.
std::uint64_t Needs(const LladaConfig& config, const GenerationRequest& r, std::uint64_t weights) {
  RequestShape s = ShapeOf(r);
  s.weights_bytes = weights;
  return EstimateRequest(config, s).total();
}

std::set<std::string> Fields(const ClampResult& r) {
  std::set<std::string> out;
  for (const auto& a : r.adjustments) out.insert(a.field);
  return out;
}

// The adjustment of `field`; a test failure (and an empty adjustment, not a crash) when there is none.
const Adjustment* Find(const ClampResult& r, const std::string& field) {
  for (const auto& a : r.adjustments)
    if (a.field == field) return &a;
  ADD_FAILURE() << "no adjustment of '" << field << "'";
  static const Adjustment kNone;
  return &kNone;
}

void ExpectSame(const GenerationRequest& a, const GenerationRequest& b) {
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.prompt_length, b.prompt_length);
  EXPECT_EQ(a.params.gen_length, b.params.gen_length);
  EXPECT_EQ(a.params.block_length, b.params.block_length);
  EXPECT_EQ(a.params.steps, b.params.steps);
  EXPECT_EQ(a.params.temperature, b.params.temperature);
  EXPECT_EQ(a.params.cfg_scale, b.params.cfg_scale);
  EXPECT_EQ(a.params.sampler, b.params.sampler);
  EXPECT_EQ(a.compute_dtype_bytes, b.compute_dtype_bytes);
  EXPECT_EQ(a.params.attention_query_chunk, b.params.attention_query_chunk);
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
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  GenerationRequest asked = Ask(32, 256, 32, 256);
  asked.params.temperature = 0.8;
  asked.params.cfg_scale = 1.0;
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
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
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

TEST(ShapeOf, TheFastModesFloat64ConfidencesAreCounted) {
  // fast_sampler.cc takes the confidences' softmax in float64 with a cache or a threshold / factor
  // rule; plain block_logits keeps the reference's dtype (bench_memory measured the difference).
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  const auto estimate = [&](SamplerMode mode) {
    const RequestShape s = ShapeOf(Ask(32, 128, 32, 128, mode));
    return std::make_pair(s.float64_confidence, EstimateRequest(config, s).logits);
  };
  const auto plain = estimate(SamplerMode::kBlockLogits);
  EXPECT_FALSE(plain.first);
  const std::uint64_t f64 = 2ull * 8 * 32 * static_cast<std::uint64_t>(config.embedding_size);  // block rows
  for (SamplerMode mode : {SamplerMode::kThreshold, SamplerMode::kFactor}) {
    const auto ruled = estimate(mode);
    EXPECT_TRUE(ruled.first) << generation::SamplerModeName(mode);
    EXPECT_GE(ruled.second, plain.second + f64 - 32ull * config.embedding_size * 8) << generation::SamplerModeName(mode);
  }
  EXPECT_TRUE(estimate(SamplerMode::kDualCache).first);
  EXPECT_FALSE(estimate(SamplerMode::kReference).first);
}

TEST(Clamp, OffRefusesAnOverLongRequest) {
  auto r = Clamp(testing::SmallConfigWithLladaVocab(), Ask(4000, 256, 32, 256), ~0ull, 0, ClampPolicy::kOff);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("max_sequence_length (4096)"), std::string::npos);
}

TEST(Clamp, OverLongRequestsAreCutToMaxSequenceLength) {
  for (ClampPolicy p : {ClampPolicy::kStandard, ClampPolicy::kExtreme}) {
    auto r = Clamp(testing::SmallConfigWithLladaVocab(), Ask(4000, 256, 32, 256), ~0ull, 0, p);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->applied.params.gen_length, 96);  // the largest multiple of 32 in the 96 tokens left
    EXPECT_EQ(r->applied.params.block_length, 32);
    EXPECT_EQ(r->applied.params.steps, 96);
    EXPECT_EQ(Fields(*r), (std::set<std::string>{"gen_length", "steps"}));
    const Adjustment* gen = Find(*r, "gen_length");
    EXPECT_EQ(gen->asked, "256");
    EXPECT_EQ(gen->applied, "96");
    EXPECT_NE(gen->reason.find("max_sequence_length"), std::string::npos);
    EXPECT_EQ(Find(*r, "steps")->asked, "256");
  }
  // A block longer than the room left: one block of what is left.
  auto r = Clamp(testing::SmallConfigWithLladaVocab(), Ask(4000, 256, 128, 128), ~0ull, 0, ClampPolicy::kStandard);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->applied.params.gen_length, 96);
  EXPECT_EQ(r->applied.params.block_length, 96);
  EXPECT_EQ(r->applied.params.steps, 48);  // half a step per token, as asked
  EXPECT_EQ(Fields(*r), (std::set<std::string>{"gen_length", "block_length", "steps"}));
}

TEST(Clamp, StandardTakesTheLargestMultipleOfTheBlockThatFits) {
  const LladaConfig config = LladaConfig();
  GenerationRequest asked = Ask(128, 1024, 64, 1024);
  asked.compute_dtype_bytes = 2;
  GenerationRequest at512 = asked;
  at512.params.gen_length = 512;
  at512.params.steps = 512;
  const std::uint64_t budget = Needs(config, at512, kWeights) + 1000;
  auto r = Clamp(config, asked, budget, kWeights, ClampPolicy::kStandard);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->applied.params.gen_length, 512);
  EXPECT_EQ(r->applied.params.block_length, 64);
  EXPECT_EQ(r->applied.params.steps, 512);
  EXPECT_LE(r->estimate.total(), budget);
  GenerationRequest next = r->applied;
  next.params.gen_length += 64;
  EXPECT_GT(Needs(config, next, kWeights), budget);  // one more block would not fit
  EXPECT_EQ(Fields(*r), (std::set<std::string>{"gen_length", "steps"}));
  const Adjustment* gen = Find(*r, "gen_length");
  EXPECT_EQ(gen->asked, "1024");
  EXPECT_EQ(gen->applied, "512");
  EXPECT_NE(gen->reason.find("budget"), std::string::npos);
  EXPECT_NE(gen->reason.find("multiple of block_length 64"), std::string::npos);
}

TEST(Clamp, StepsKeepTheAskedStepsPerToken) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  const GenerationRequest asked = Sampled(Ask(32, 256, 32, 128));  // 16 steps per block of 32
  GenerationRequest half = asked;
  half.params.gen_length = 128;
  half.params.steps = 64;
  auto r = Clamp(config, asked, Needs(config, half, kWeights), kWeights, ClampPolicy::kStandard);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->applied.params.gen_length, 128);
  EXPECT_EQ(r->applied.params.steps, 64);
  EXPECT_EQ(Find(*r, "steps")->applied, "64");
}

TEST(Clamp, StandardShrinksTheBlockOfAFastModeBeforeTheLength) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  const GenerationRequest asked = Ask(32, 256, 256, 256, SamplerMode::kBlockLogits);
  GenerationRequest smaller = asked;
  smaller.params.block_length = 64;
  const std::uint64_t budget = Needs(config, smaller, kWeights);
  auto r = Clamp(config, asked, budget, kWeights, ClampPolicy::kStandard);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->applied.params.gen_length, 256);  // logits rows were the problem, not the length
  EXPECT_EQ(r->applied.params.block_length, 64);
  EXPECT_EQ(r->applied.params.steps, 256);
  EXPECT_EQ(Fields(*r), (std::set<std::string>{"block_length"}));
  EXPECT_NE(Find(*r, "block_length")->reason.find("not even one block of 256"), std::string::npos);
}

TEST(Clamp, StandardChangesOnlyLengths) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  GenerationRequest asked = Ask(32, 512, 32, 512);
  asked.params.temperature = 1.0;
  asked.params.cfg_scale = 2.0;
  asked.params.attention_query_chunk = 0;
  const std::uint64_t budget = Needs(config, asked, kWeights) / 3 + kWeights;
  auto r = Clamp(config, asked, budget, kWeights, ClampPolicy::kStandard);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_LT(r->applied.params.gen_length, 512);
  EXPECT_EQ(r->applied.params.sampler, SamplerMode::kReference);
  EXPECT_EQ(r->applied.params.temperature, 1.0);
  EXPECT_EQ(r->applied.params.cfg_scale, 2.0);
  EXPECT_EQ(r->applied.params.attention_query_chunk, 0);
  EXPECT_LE(r->estimate.total(), budget);
}

TEST(Clamp, ResourceExhaustedWhenEvenTheMinimumDoesNotFit) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
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
    // Programs tell it apart by its reason (HTTP 503 does_not_fit), not by this text.
    EXPECT_EQ(r.status().reason(), "DOES_NOT_FIT");
    EXPECT_EQ(r.status().detail()->metadata.at("budget_bytes"), std::to_string(budget));
  }
  auto r = Clamp(config, Ask(32, 256, 32, 256), kWeights - 1, kWeights, ClampPolicy::kExtreme);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exceed the budget: load the model at a smaller precision"), std::string::npos);
}

TEST(Clamp, NeverBelowTheMinimumGenLength) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  const GenerationRequest asked = Sampled(Ask(32, 256, 32, 256));
  GenerationRequest tiny = Sampled(Ask(32, 12, 12, 12));
  const std::uint64_t budget = Needs(config, tiny, kWeights);
  ClampOptions options;
  options.min_gen_length = 16;
  auto refused = Clamp(config, asked, budget, kWeights, ClampPolicy::kStandard, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  options.min_gen_length = 8;
  auto r = Clamp(config, asked, budget, kWeights, ClampPolicy::kStandard, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->applied.params.gen_length, 12);  // no multiple of 32 fits: the longest length, one block
  EXPECT_EQ(r->applied.params.block_length, 12);
  EXPECT_EQ(r->applied.params.steps, 12);
  // A request shorter than the floor is never made longer, only refused or kept.
  auto short_ok = Clamp(config, tiny, budget, kWeights, ClampPolicy::kStandard);
  ASSERT_TRUE(short_ok.ok());
  EXPECT_EQ(short_ok->applied.params.gen_length, 12);
}

TEST(Clamp, ExtremeSwitchesToACacheModeWhereStandardMustCut) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  const GenerationRequest asked = Sampled(Ask(8, 256, 32, 256));
  GenerationRequest dual = asked;
  dual.params.sampler = SamplerMode::kDualCache;
  const std::uint64_t budget = Needs(config, dual, kWeights);
  auto standard = Clamp(config, asked, budget, kWeights, ClampPolicy::kStandard);
  ASSERT_TRUE(standard.ok());
  EXPECT_LT(standard->applied.params.gen_length, 256);
  auto extreme = Clamp(config, asked, budget, kWeights, ClampPolicy::kExtreme);
  ASSERT_TRUE(extreme.ok()) << extreme.status().ToString();
  EXPECT_EQ(extreme->applied.params.gen_length, 256);
  EXPECT_EQ(extreme->applied.params.sampler, SamplerMode::kDualCache);
  EXPECT_EQ(Fields(*extreme), (std::set<std::string>{"sampler"}));
  EXPECT_EQ(Find(*extreme, "sampler")->asked, "reference");
  EXPECT_NE(Find(*extreme, "sampler")->reason.find("current block only"), std::string::npos);
  EXPECT_LE(extreme->estimate.total(), budget);
}

// A greedy reference is budgeted at what it computes (the current block's logits, as
// block_logits does), so where that fits it is left as asked: no length cut and no sampler
// switch. With temperature the same budget is too small (logits for every position).
TEST(Clamp, AGreedyReferenceThatFitsAsBlockLogitsIsLeftAsAsked) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  const GenerationRequest asked = Ask(32, 256, 32, 256);
  GenerationRequest block = asked;
  block.params.sampler = SamplerMode::kBlockLogits;
  const std::uint64_t budget = Needs(config, block, kWeights);
  for (ClampPolicy policy : {ClampPolicy::kStandard, ClampPolicy::kExtreme}) {
    auto r = Clamp(config, asked, budget, kWeights, policy);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->adjustments.empty()) << r->adjustments.front().field << ": " << r->adjustments.front().reason;
    ExpectSame(r->applied, asked);
    auto sampled = Clamp(config, Sampled(asked), budget, kWeights, policy);
    if (sampled.ok()) {
      EXPECT_FALSE(sampled->adjustments.empty());  // extreme: cheaper settings
    } else {
      EXPECT_EQ(sampled.status().code(), StatusCode::kResourceExhausted);  // standard: not even at gen_length 16
    }
  }
}

TEST(Clamp, ExtremeFallsBackToBlockLogitsAndKeepsTheDecodingRule) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  const GenerationRequest asked = Ask(32, 256, 32, 256, SamplerMode::kPrefixCacheFactor);
  GenerationRequest nocache = asked;
  nocache.params.sampler = SamplerMode::kFactor;
  const std::uint64_t budget = Needs(config, nocache, kWeights);
  ASSERT_LT(budget, Needs(config, asked, kWeights));
  auto r = Clamp(config, asked, budget, kWeights, ClampPolicy::kExtreme);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->applied.params.sampler, SamplerMode::kFactor);
  EXPECT_EQ(r->applied.params.gen_length, 256);
}

TEST(Clamp, ExtremeChunksAttentionWhereStandardCannotHelp) {
  // A long prompt: attention scores dominate and a shorter answer barely changes them.
  const LladaConfig config = LladaConfig();
  GenerationRequest asked = Ask(3072, 64, 32, 64, SamplerMode::kDualCache);
  asked.compute_dtype_bytes = 2;
  GenerationRequest chunked = asked;
  chunked.params.attention_query_chunk = 256;
  const std::uint64_t budget = Needs(config, chunked, kWeights);
  auto standard = Clamp(config, asked, budget, kWeights, ClampPolicy::kStandard);
  ASSERT_FALSE(standard.ok());
  EXPECT_EQ(standard.status().code(), StatusCode::kResourceExhausted);
  auto r = Clamp(config, asked, budget, kWeights, ClampPolicy::kExtreme);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // The largest power of two that fits (the MLP, not the scores, may then be the peak).
  const std::int64_t chunk = r->applied.params.attention_query_chunk;
  EXPECT_GE(chunk, 256);
  EXPECT_EQ(chunk & (chunk - 1), 0);
  GenerationRequest twice = r->applied;
  twice.params.attention_query_chunk = 2 * chunk;
  EXPECT_GT(Needs(config, twice, kWeights), budget);
  EXPECT_LE(r->estimate.total(), budget);
  EXPECT_EQ(r->applied.params.gen_length, 64);
  EXPECT_EQ(r->applied.params.sampler, SamplerMode::kDualCache);
  EXPECT_EQ(Fields(*r), (std::set<std::string>{"attention_query_chunk"}));
  EXPECT_EQ(Find(*r, "attention_query_chunk")->asked, "0");
}

TEST(Clamp, ExtremeDropsNoiseBeforeGuidanceAndOnlyWhatIsNeeded) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  GenerationRequest asked = Ask(32, 128, 32, 128, SamplerMode::kBlockLogits);
  asked.params.temperature = 1.0;
  asked.params.cfg_scale = 2.0;
  GenerationRequest greedy = asked;
  greedy.params.temperature = 0;
  auto r = Clamp(config, asked, Needs(config, greedy, kWeights), kWeights, ClampPolicy::kExtreme);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->applied.params.temperature, 0);
  EXPECT_EQ(r->applied.params.cfg_scale, 2.0);
  EXPECT_EQ(r->applied.params.gen_length, 128);
  EXPECT_EQ(Fields(*r), (std::set<std::string>{"temperature"}));
  EXPECT_EQ(Find(*r, "temperature")->asked, "1");

  GenerationRequest plain = greedy;
  plain.params.cfg_scale = 0;
  r = Clamp(config, asked, Needs(config, plain, kWeights), kWeights, ClampPolicy::kExtreme);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Fields(*r), (std::set<std::string>{"temperature", "cfg_scale"}));
  EXPECT_EQ(r->applied.params.gen_length, 128);
}

TEST(Clamp, ExtremeFitsTheSeedsSmallGpuSetting) {
  // LLaDA 8B with int4 weights on a 10 GiB budget, asking for a long reference generation.
  const LladaConfig config = LladaConfig();
  const std::uint64_t weights = *WeightBytes(config, *weights::PrecisionSpec::Parse("int4"));
  const std::uint64_t budget = 10ull << 30;
  GenerationRequest asked = Ask(512, 2048, 32, 2048);
  asked.compute_dtype_bytes = 2;
  asked.params.temperature = 0.5;
  asked.params.cfg_scale = 1.0;
  auto standard = Clamp(config, asked, budget, weights, ClampPolicy::kStandard);
  auto extreme = Clamp(config, asked, budget, weights, ClampPolicy::kExtreme);
  ASSERT_TRUE(standard.ok()) << standard.status().ToString();
  ASSERT_TRUE(extreme.ok()) << extreme.status().ToString();
  EXPECT_LE(standard->estimate.total(), budget);
  EXPECT_LE(extreme->estimate.total(), budget);
  // Extreme keeps more of the answer by computing less per token.
  EXPECT_GT(extreme->applied.params.gen_length, standard->applied.params.gen_length);
  EXPECT_NE(extreme->applied.params.sampler, SamplerMode::kReference);
  for (const auto& a : extreme->adjustments) {
    EXPECT_FALSE(a.reason.empty()) << a.field;
    EXPECT_NE(a.asked, a.applied) << a.field;
  }
}

TEST(Clamp, RefusesMalformedRequests) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  auto expect_invalid = [&](const GenerationRequest& r, const std::string& field, const std::string& needle) {
    auto c = Clamp(config, r, ~0ull, 0, ClampPolicy::kStandard);
    ASSERT_FALSE(c.ok()) << needle;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(c.status().field(), field) << c.status().message();
    EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().message();
  };
  expect_invalid(Ask(10, 100, 32, 100), "block_length", "block_length: must divide gen_length (100), got 32");
  expect_invalid(Ask(10, 128, 32, 6), "steps", "steps: must be a multiple of the number of blocks");
  expect_invalid(Ask(10, 128, 32, 256), "steps", "steps: must be <= gen_length (128), got 256");
  // The sampler is a mode now, never a bad name: a bad name is refused where it is parsed.
  const auto fastest = generation::ParseSamplerMode("fastest");
  ASSERT_FALSE(fastest.ok());
  EXPECT_EQ(fastest.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fastest.status().field(), "sampler");
  EXPECT_NE(fastest.status().message().find("dual_cache"), std::string::npos) << fastest.status().message();
  expect_invalid(Ask(4096, 16, 16, 16), "prompt_length", "leaves no room");
  GenerationRequest r = Ask(10, 128, 32, 128);
  r.compute_dtype_bytes = 3;
  expect_invalid(r, "compute_dtype_bytes", "compute_dtype_bytes: must be 2 (bf16, fp16) or 4 (fp32), got 3");
  r = Ask(10, 128, 32, 128);
  r.batch = 0;
  expect_invalid(r, "batch", "batch: must be >= 1, got 0");
  r = Ask(10, 128, 32, 128);
  r.params.temperature = -1;
  expect_invalid(r, "temperature", "temperature: must be in [0, 100]");
}


// A likelihood job (GenerationParams::likelihood) is sized by its continuation: the logits and
// log-softmax of its masked positions, whatever its one generated position (bench_memory measured
// it at 13-36x a one-row greedy step before ShapeOf said so).
TEST(ClampShapeTest, ALikelihoodJobIsSizedByItsContinuationsLogits) {
  const checkpoint::LladaConfig config = testing::SmallConfigWithLladaVocab();
  GenerationRequest r;
  r.prompt_length = 256;
  r.params.gen_length = r.params.block_length = r.params.steps = 1;
  const MemoryEstimate step = EstimateRequest(config, ShapeOf(r));
  std::uint64_t last = step.peak;
  for (std::int64_t continuation : {16, 64, 256}) {
    r.params.likelihood = generation::LikelihoodParams{continuation, 128, 16, false};
    const RequestShape shape = ShapeOf(r);
    EXPECT_EQ(shape.logits_rows, continuation);
    EXPECT_TRUE(shape.logprobs);
    const MemoryEstimate e = EstimateRequest(config, shape);
    // At least the continuation's rows of logits and their float32 log-softmax.
    EXPECT_GE(e.peak, static_cast<std::uint64_t>(continuation) * config.embedding_size * 8) << continuation;
    EXPECT_GT(e.peak, last) << continuation;
    last = e.peak;
  }
  r.params.cfg_scale = 1.0;
  EXPECT_GT(EstimateRequest(config, ShapeOf(r)).peak, last) << "guidance doubles the rows";
}

// A likelihood job's samples a forward (likelihood.rows_per_forward): unset, the most of its draw
// that fit, halving (whatever the policy: nothing asked changes); asked, kept under policy off
// and otherwise halved until it fits, said by name. Each sample is a sequence of the batch.
TEST(ClampLikelihoodTest, RowsPerForwardAreTheMostThatFit) {
  const checkpoint::LladaConfig config = testing::SmallConfigWithLladaVocab();
  GenerationRequest r;
  r.prompt_length = 256;
  r.params.gen_length = r.params.block_length = r.params.steps = 1;
  r.params.likelihood = generation::LikelihoodParams{64, 128, 16, false, 0};
  const auto total = [&](std::int32_t rows) {
    GenerationRequest t = r;
    t.params.likelihood->rows_per_forward = rows;
    RequestShape shape = ShapeOf(t);
    EXPECT_EQ(shape.batch, rows);
    shape.weights_bytes = kWeights;
    return EstimateRequest(config, shape).total();
  };
  ASSERT_GT(total(8), total(4));
  const std::uint64_t roomy = total(16) + 1, tight = (total(4) + total(8)) / 2;
  const auto rows_of = [](const StatusOr<ClampResult>& c) {
    return c.ok() ? c->applied.params.likelihood->rows_per_forward : -1;
  };

  auto c = Clamp(config, r, roomy, kWeights, ClampPolicy::kStandard);
  EXPECT_EQ(rows_of(c), 16);
  EXPECT_TRUE(c.ok() && c->adjustments.empty());
  for (ClampPolicy p : {ClampPolicy::kStandard, ClampPolicy::kOff}) {
    c = Clamp(config, r, tight, kWeights, p);
    EXPECT_EQ(rows_of(c), 4) << ClampPolicyName(p);
    EXPECT_TRUE(c.ok() && c->adjustments.empty()) << "unset: chosen, not changed";
  }

  r.params.likelihood->rows_per_forward = 16;
  c = Clamp(config, r, tight, kWeights, ClampPolicy::kStandard);
  ASSERT_EQ(rows_of(c), 4);
  ASSERT_EQ(c->adjustments.size(), 1u);
  EXPECT_EQ(c->adjustments[0].field, "likelihood.rows_per_forward");
  EXPECT_EQ(c->adjustments[0].asked, "16");
  EXPECT_EQ(c->adjustments[0].applied, "4");
  EXPECT_NE(c->adjustments[0].reason.find("4 samples a forward fit"), std::string::npos) << c->adjustments[0].reason;
  c = Clamp(config, r, tight, kWeights, ClampPolicy::kOff);
  EXPECT_EQ(rows_of(c), 16) << "policy off keeps what was asked";
  EXPECT_TRUE(c.ok() && !c->fits);
}

}  // namespace
}  // namespace unmask::fitting
