// The memory model and the clamp with LLaDA2's block diffusion (sampler llada2, issue 29): the
// canvas padded to whole blocks with its K/V kept, the sampler never swapped (it is the one mode
// of LLaDA2 models), steps counted per block, and the room below max_sequence_length counted in
// whole blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/fitting/clamp.h"
#include "common/fitting/sampler_kind.h"
#include "common/generation/validate.h"
#include "tests/fixtures/tiny_config.h"

namespace unmask::fitting {
namespace {

using generation::SamplerMode;

GenerationRequest Llada2(std::int64_t prompt, std::int64_t gen, std::int64_t block, std::int64_t steps) {
  GenerationRequest r;
  r.prompt_length = prompt;
  r.params.sampler = SamplerMode::kLlada2;
  r.params.gen_length = gen;
  r.params.block_length = block;
  r.params.steps = steps;
  r.params.threshold = 0.95;
  return r;
}

MemoryEstimate Estimate(const checkpoint::LladaConfig& config, const GenerationRequest& r) {
  return EstimateRequest(config, ShapeOf(r));
}

TEST(Llada2Memory, TheCacheCoversTheCanvasPaddedToWholeBlocks) {
  const auto config = testing::SmallConfigWithLladaVocab();
  const MemoryEstimate llada2 = Estimate(config, Llada2(10, 60, 32, 32));  // 70 tokens: 3 blocks, 96 positions
  GenerationRequest prefix = Llada2(10, 86, 32, 86);                        // 96 positions, no padding
  prefix.params.sampler = SamplerMode::kPrefixCache;
  const MemoryEstimate same_window = Estimate(config, prefix);
  EXPECT_GT(llada2.kv_cache, 0u);
  EXPECT_EQ(llada2.kv_cache, same_window.kv_cache);
  // One block's logits rows both, but LLaDA2 takes no float64 softmax of them (prefix_cache does).
  EXPECT_LT(llada2.logits, same_window.logits);
  // Longer blocks pad further and compute more logits rows.
  EXPECT_GT(Estimate(config, Llada2(10, 60, 64, 64)).peak, llada2.peak);
  EXPECT_EQ(SamplerKindName(SamplerKindOf(SamplerMode::kLlada2)), std::string("llada2"));
  EXPECT_EQ(WithSamplerKind(SamplerMode::kLlada2, SamplerKind::kBlockLogits), SamplerMode::kLlada2);
  EXPECT_EQ(WithSamplerKind(SamplerMode::kReference, SamplerKind::kLlada2), SamplerMode::kReference);
}

TEST(Llada2Clamp, ShrinksTheLengthButNeverTheSampler) {
  const auto config = checkpoint::LladaConfig();
  const std::uint64_t weights = 1ull << 30;
  GenerationRequest asked = Llada2(128, 1024, 32, 32);
  asked.params.temperature = 0.8;
  GenerationRequest half = asked;
  half.params.gen_length = 512;
  const std::uint64_t budget = Estimate(config, half).peak + weights + 1000;
  for (ClampPolicy policy : {ClampPolicy::kStandard, ClampPolicy::kExtreme}) {
    auto r = Clamp(config, asked, budget, weights, policy);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->applied.params.sampler, SamplerMode::kLlada2);
    EXPECT_LE(r->applied.params.gen_length, 512);
    EXPECT_GE(r->applied.params.gen_length, 480);
    EXPECT_EQ(r->applied.params.block_length, 32);
    EXPECT_EQ(r->applied.params.steps, 32);  // per block: the length does not change it
    EXPECT_LE(r->estimate.total(), budget);
    for (const auto& a : r->adjustments) {
      EXPECT_NE(a.field, "sampler");
      EXPECT_NE(a.field, "steps");
    }
    EXPECT_TRUE(generation::ValidateFields(r->applied.params).ok());
  }
}

TEST(Llada2Clamp, TheRoomIsCountedInWholeBlocks) {
  const auto config = testing::SmallConfigWithLladaVocab();  // max_sequence_length 4096
  // 3950 + 100 = 4050 tokens, but blocks of 100 pad them to 4100: cut to the 40 whole blocks
  // below 4096, keeping the block (it need not divide gen_length) and the steps per block.
  auto r = Clamp(config, Llada2(3950, 100, 100, 64), ~0ull, 0, ClampPolicy::kStandard);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->applied.params.gen_length, 50);
  EXPECT_EQ(r->applied.params.block_length, 100);
  EXPECT_EQ(r->applied.params.steps, 64);
  EXPECT_EQ(generation::SequenceLength(r->applied.params, 3950), 4000);
  ASSERT_EQ(r->adjustments.size(), 1u);
  EXPECT_EQ(r->adjustments[0].field, "gen_length");
  EXPECT_NE(r->adjustments[0].reason.find("padded to whole blocks of 100"), std::string::npos) << r->adjustments[0].reason;
  // No whole block after the prompt: a shorter block, with steps kept per token.
  r = Clamp(config, Llada2(4050, 40, 100, 50), ~0ull, 0, ClampPolicy::kStandard);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_LE(generation::SequenceLength(r->applied.params, 4050), 4096);
  EXPECT_LT(r->applied.params.block_length, 100);
  EXPECT_EQ(r->applied.params.steps,
            std::max<std::int64_t>(1, std::llround(0.5 * static_cast<double>(r->applied.params.block_length))));
  // Clamp policy off refuses, naming gen_length.
  r = Clamp(config, Llada2(3950, 100, 100, 64), ~0ull, 0, ClampPolicy::kOff);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "gen_length");
  EXPECT_NE(r.status().message().find("padded to whole blocks of 100"), std::string::npos);
}

}  // namespace
}  // namespace unmask::fitting
