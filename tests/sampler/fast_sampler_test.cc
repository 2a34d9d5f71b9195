// The fast sampling modes: block_logits against the official golden vectors, the KV cache at the
// model level, the cases where the caches must reduce to block_logits, the parallel decoding
// rules, early stop, cancellation, validation and the mode registry.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "common/model/kv_cache.h"
#include "common/model/llada_model.h"
#include "common/sampler/fast_sampler.h"
#include "common/sampler/parallel_decoding.h"
#include "common/sampler/reference_sampler.h"
#include "common/sampler/sampler_registry.h"
#include "tests/fixtures/temp_checkpoint.h"
#include "tests/fixtures/test_paths.h"
#include "tests/fixtures/golden_case.h"

namespace unmask::sampler {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

at::Tensor Ids(std::vector<std::int64_t> ids) {
  return at::from_blob(ids.data(), {1, static_cast<std::int64_t>(ids.size())}, at::kLong).clone();
}

FastOptions Options(CacheKind cache, DecodeRule rule = DecodeRule::kSchedule, bool early_stop = false) {
  FastOptions o;
  o.cache = cache;
  o.rule = rule;
  o.early_stop = early_stop;
  return o;
}

// ---------------------------------------------------------------------------------------------
// block_logits on the tiny golden model (fp32), every golden case with temperature 0.

class FastGoldenTest : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() {
    std::ifstream in(unmask::testing::TestDataPath("tiny-llada.golden.json"));
    golden_ = new json(json::parse(in));
    auto loaded = model::LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), model::ModelOptions{});
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    model_ = loaded->release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete golden_;
  }
  static GenerationParams CaseParams(const json& c) { return unmask::testing::GoldenCaseParams(c); }
  static PromptBatch CasePrompts(const json& c) { return unmask::testing::GoldenCasePrompts(c); }
  static json* golden_;
  static model::LladaModel* model_;
};
json* FastGoldenTest::golden_ = nullptr;
model::LladaModel* FastGoldenTest::model_ = nullptr;

TEST_P(FastGoldenTest, BlockLogitsEqualsOfficialOutputAtTemperatureZero) {
  const json& c = (*golden_)["cases"][GetParam()];
  const GenerationParams p = CaseParams(c);
  ASSERT_EQ(p.temperature, 0.0) << "case " << GetParam() << " is not a temperature-0 case";
  std::vector<std::vector<std::vector<std::int64_t>>> per_step;
  auto result = FastGenerate(*model_, CasePrompts(c), p, Options(CacheKind::kNone), [&](const StepEvent& ev) {
    per_step.push_back(ev.positions);
    return true;
  });
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_STREQ(result->sampler, "block_logits");
  EXPECT_EQ(result->output, c["output"].get<std::vector<std::vector<std::int64_t>>>());
  EXPECT_EQ(per_step, c["unmasked_per_step"].get<std::vector<std::vector<std::vector<std::int64_t>>>>());
  EXPECT_EQ(result->steps_run, p.steps);
}

// Case 7 is the only one with temperature > 0 (noise is drawn for block rows only there).
INSTANTIATE_TEST_SUITE_P(TemperatureZeroCases, FastGoldenTest, ::testing::Values(0, 1, 2, 3, 4, 5, 6, 8, 9));

// With one step per block every step of the cached modes is a cache refresh, i.e. a full
// forward: prefix_cache and dual_cache must then equal block_logits, and all equal the reference.
TEST_F(FastGoldenTest, CachesWithOneStepPerBlockEqualBlockLogitsAndReference) {
  for (int index : {1, 2, 3, 6, 9}) {  // several blocks, a batch of two, cfg
    const json& c = (*golden_)["cases"][index];
    GenerationParams p = CaseParams(c);
    p.steps = p.gen_length / p.block_length;
    auto reference = ReferenceGenerate(*model_, CasePrompts(c), p);
    ASSERT_TRUE(reference.ok()) << reference.status().ToString();
    for (CacheKind cache : {CacheKind::kNone, CacheKind::kPrefix, CacheKind::kDual}) {
      auto r = FastGenerate(*model_, CasePrompts(c), p, Options(cache));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->output, reference->output) << "case " << index << " " << r->sampler;
      EXPECT_EQ(r->steps_run, p.steps);
    }
  }
}

// The first step of every block is a full forward in every mode: dual_cache's first step of
// block 0 must unmask exactly what block_logits' does, even with several steps per block.
TEST_F(FastGoldenTest, DualCacheFirstStepOfABlockEqualsBlockLogits) {
  const json& c = (*golden_)["cases"][9];  // 2 blocks of 32, 32 steps each
  const GenerationParams p = CaseParams(c);
  auto first_steps = [&](CacheKind cache) {
    std::vector<StepEvent> firsts;
    auto r = FastGenerate(*model_, CasePrompts(c), p, Options(cache), [&](const StepEvent& ev) {
      if (ev.step_in_block == 0) firsts.push_back(ev);
      return true;
    });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return std::make_pair(firsts, r->output);
  };
  auto [block_firsts, block_out] = first_steps(CacheKind::kNone);
  auto [dual_firsts, dual_out] = first_steps(CacheKind::kDual);
  ASSERT_EQ(block_firsts.size(), 2u);
  ASSERT_EQ(dual_firsts.size(), 2u);
  EXPECT_EQ(dual_firsts[0].positions, block_firsts[0].positions);
  EXPECT_EQ(dual_firsts[0].tokens, block_firsts[0].tokens);
}

// ---------------------------------------------------------------------------------------------
// The KV cache at the model level.

class FastKvCacheModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto loaded = model::LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), model::ModelOptions{});
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    tiny_ = loaded->release();
    dir_ = new unmask::testing::TempDir();
    unmask::testing::WriteRandomCheckpoint(dir_->path(), unmask::testing::SmallConfig(), 1);  // 2 KV heads
    auto gqa = model::LladaModel::Load(dir_->path(), model::ModelOptions{});
    ASSERT_TRUE(gqa.ok()) << gqa.status().ToString();
    gqa_ = gqa->release();
  }
  static void TearDownTestSuite() {
    delete tiny_;
    delete gqa_;
    delete dir_;
  }
  static model::LladaModel* tiny_;
  static model::LladaModel* gqa_;
  static unmask::testing::TempDir* dir_;
};
model::LladaModel* FastKvCacheModelTest::tiny_ = nullptr;
model::LladaModel* FastKvCacheModelTest::gqa_ = nullptr;
unmask::testing::TempDir* FastKvCacheModelTest::dir_ = nullptr;

constexpr std::int64_t M = 126336;  // the tiny model's mask id

TEST_F(FastKvCacheModelTest, FillingTheCacheGivesExactlyHidden) {
  at::Tensor ids = Ids({5, 6, 7, 8, M, M, M, M, M, M});
  model::KvCache cache;
  at::Tensor filled = tiny_->HiddenFillCache(ids, at::Tensor(), &cache);
  EXPECT_TRUE(at::equal(filled, tiny_->Hidden(ids, at::Tensor())));
  ASSERT_EQ(cache.layers.size(), 2u);
  EXPECT_EQ(cache.length, 10);
  EXPECT_EQ(cache.layers[0].k.sizes(), (std::vector<std::int64_t>{1, 4, 10, 16}));
  EXPECT_GT(cache.Bytes(), 0);
}

TEST_F(FastKvCacheModelTest, SegmentRowsEqualFullForwardRowsWhenNothingChanged) {
  at::Tensor ids = Ids({5, 6, 7, 8, 9, 11, 12, M, M, M, M, M, M, M, M, M});
  const at::Tensor full = tiny_->Hidden(ids, at::Tensor());
  // Dual-cache shape (block rows only) and prefix-cache shape (block and everything after).
  for (auto [offset, length] : {std::pair<std::int64_t, std::int64_t>{7, 4}, {7, 9}, {11, 5}, {0, 3}}) {
    model::KvCache cache;
    tiny_->HiddenFillCache(ids, at::Tensor(), &cache);
    at::Tensor seg = tiny_->HiddenSegment(ids.narrow(1, offset, length), offset, &cache);
    ASSERT_EQ(seg.sizes(), (std::vector<std::int64_t>{1, length, 64}));
    EXPECT_TRUE(at::allclose(seg, full.narrow(1, offset, length), 1e-5, 1e-5)) << "segment at " << offset;
    // Logits (what the sampler reads) agree too.
    EXPECT_TRUE(at::allclose(tiny_->HeadLogits(seg), tiny_->HeadLogits(full.narrow(1, offset, length)), 1e-4, 1e-4));
  }
}

TEST_F(FastKvCacheModelTest, SegmentEqualityHoldsWithGroupedKvHeadsPaddingAndABatch) {
  at::Tensor ids = at::cat({Ids({298, 298, 3, 4, 5, 299, 299, 299, 299}), Ids({1, 2, 3, 4, 5, 299, 299, 299, 299})}, 0);
  at::Tensor mask = at::cat({Ids({0, 0, 1, 1, 1, 1, 1, 1, 1}), Ids({1, 1, 1, 1, 1, 1, 1, 1, 1})}, 0);
  model::KvCache cache;
  const at::Tensor full = gqa_->HiddenFillCache(ids, mask, &cache);
  EXPECT_EQ(cache.layers[0].k.size(1), 2) << "the cache expanded the grouped KV heads";
  at::Tensor seg = gqa_->HiddenSegment(ids.narrow(1, 5, 4), 5, &cache);
  // This model's hidden states reach ~100 (weights of std 0.5): float32 rounding of a different
  // summation order shows up around 5e-5 in absolute terms, ~1e-6 relative.
  EXPECT_TRUE(at::allclose(seg, full.narrow(1, 5, 4), 1e-4, 1e-4))
      << "max |diff| " << (seg - full.narrow(1, 5, 4)).abs().max().item<double>() << ", max |value| "
      << full.abs().max().item<double>() << ", per row " << (seg - full.narrow(1, 5, 4)).abs().amax({2});
}

// In bf16 the segment path rounds differently from the full forward, but no more than bf16
// itself differs from float32.
TEST_F(FastKvCacheModelTest, Bf16SegmentRowsStayWithinBf16Rounding) {
  model::ModelOptions bf16;
  bf16.precision = model::Precision::kBFloat16;
  auto m = model::LladaModel::Load(unmask::testing::TestDataPath("tiny-llada"), bf16);
  ASSERT_TRUE(m.ok());
  at::Tensor ids = Ids({5, 6, 7, 8, 9, 11, 12, M, M, M, M, M, M, M, M, M});
  const at::Tensor exact = tiny_->Hidden(ids, at::Tensor()).narrow(1, 7, 4);
  model::KvCache cache;
  const at::Tensor full = (*m)->HiddenFillCache(ids, at::Tensor(), &cache).narrow(1, 7, 4).to(at::kFloat);
  const at::Tensor seg = (*m)->HiddenSegment(ids.narrow(1, 7, 4), 7, &cache).to(at::kFloat);
  const double full_err = (full - exact).abs().max().item<double>();
  const double seg_err = (seg - exact).abs().max().item<double>();
  const double seg_vs_full = (seg - full).abs().max().item<double>();
  EXPECT_LE(seg_err, 2 * full_err + 1e-6) << "segment error " << seg_err << " vs bf16 full-forward error " << full_err;
  EXPECT_LE(seg_vs_full, 2 * full_err + 1e-6) << seg_vs_full;
  std::cout << "bf16: full-forward error " << full_err << ", segment error " << seg_err << ", segment vs full "
            << seg_vs_full << ", max |h| " << exact.abs().max().item<double>() << "\n";
}

// The segment's queries must read the cached K/V of the other positions, not recompute them:
// fill from sequence A, then run a segment whose surroundings in sequence B differ. The result
// follows A, not B.
TEST_F(FastKvCacheModelTest, PositionsOutsideTheSegmentComeFromTheCache) {
  at::Tensor a = Ids({5, 6, 7, 8, M, M, M, M, M, M});
  at::Tensor b = Ids({9, 9, 9, 9, M, M, M, M, 1, 2});
  model::KvCache cache;
  tiny_->HiddenFillCache(a, at::Tensor(), &cache);
  at::Tensor seg = tiny_->HiddenSegment(b.narrow(1, 4, 4), 4, &cache);
  EXPECT_TRUE(at::allclose(seg, tiny_->Hidden(a, at::Tensor()).narrow(1, 4, 4), 1e-5, 1e-5));
  EXPECT_FALSE(at::allclose(seg, tiny_->Hidden(b, at::Tensor()).narrow(1, 4, 4), 1e-3, 1e-3));
}

// A segment is computed from its own (new) tokens at their absolute RoPE positions: a segment
// covering the whole sequence has nothing stale and equals a full forward over the new tokens;
// a segment after a cached prefix changes with its tokens.
TEST_F(FastKvCacheModelTest, SegmentIsComputedFromItsNewTokens) {
  at::Tensor before = Ids({5, 6, 7, 8, M, M, M, M, M, M});
  at::Tensor after = Ids({5, 6, 7, 8, 42, M, M, 17, M, M});
  model::KvCache whole;
  tiny_->HiddenFillCache(before, at::Tensor(), &whole);
  EXPECT_TRUE(at::allclose(tiny_->HiddenSegment(after, 0, &whole), tiny_->Hidden(after, at::Tensor()), 1e-5, 1e-5));

  model::KvCache cache;
  tiny_->HiddenFillCache(before, at::Tensor(), &cache);
  at::Tensor seg = tiny_->HiddenSegment(after.narrow(1, 4, 6), 4, &cache);
  EXPECT_FALSE(at::allclose(seg, tiny_->Hidden(before, at::Tensor()).narrow(1, 4, 6), 1e-3, 1e-3))
      << "the segment's new tokens were ignored";
  // ...and is close to (not equal to: the prefix K/V are stale) the full forward over `after`.
  const double drift = (seg - tiny_->Hidden(after, at::Tensor()).narrow(1, 4, 6)).abs().max().item<double>();
  EXPECT_GT(drift, 0.0) << "the prefix was recomputed instead of read from the cache";
}

TEST_F(FastKvCacheModelTest, MisusedCacheIsAnError) {
  model::KvCache empty;
  EXPECT_ANY_THROW(tiny_->HiddenSegment(Ids({1, 2}), 0, &empty));
  model::KvCache cache;
  tiny_->HiddenFillCache(Ids({1, 2, 3, 4}), at::Tensor(), &cache);
  EXPECT_ANY_THROW(tiny_->HiddenSegment(Ids({1, 2}), 3, &cache));  // past the cached length
  EXPECT_ANY_THROW(tiny_->HiddenSegment(at::cat({Ids({1}), Ids({2})}, 0), 0, &cache));  // batch 2 vs 1
}

// ---------------------------------------------------------------------------------------------
// Parallel decoding rules on hand-made confidences.

TEST(FastParallelDecodingTest, ThresholdCountsConfidencesAtOrAboveButAtLeastOne) {
  EXPECT_EQ(ThresholdCount({}, 0.9), 0);
  EXPECT_EQ(ThresholdCount({0.5, 0.4}, 0.9), 1);  // nothing passes: the top one goes anyway
  EXPECT_EQ(ThresholdCount({0.99, 0.95, 0.9, 0.89}, 0.9), 3);  // ties pass
  EXPECT_EQ(ThresholdCount({0.3, 0.2, 0.0}, 0.0), 3);
  EXPECT_EQ(ThresholdCount({1.0, 1.0}, 1.01), 1);
}

TEST(FastParallelDecodingTest, FactorRuleTakesTheLongestRunAboveOneMinusFactorOverNPlusOne) {
  EXPECT_EQ(FactorCount({}, 1.0), 0);
  EXPECT_EQ(FactorCount({0.01}, 1.0), 1);
  // f = 1: bounds for n = 2, 3, 4, 5 are 2/3, 3/4, 4/5, 5/6.
  EXPECT_EQ(FactorCount({0.99, 0.9, 0.8, 0.7, 0.1}, 1.0), 3);
  EXPECT_EQ(FactorCount({0.99, 0.5, 0.4, 0.3}, 1.0), 1);
  EXPECT_EQ(FactorCount({1.0, 1.0, 1.0}, 1.0), 3);
  // Fast-dLLM's loop: when exactly the last of m > 1 fails its bound, all m are unmasked.
  EXPECT_EQ(FactorCount({0.5, 0.4}, 1.0), 2);
  EXPECT_EQ(FactorCount({0.99, 0.7, 0.1}, 1.0), 3);
  EXPECT_EQ(FactorCount({0.99, 0.9, 0.8, 0.7}, 1.0), 4);
  // f = 2: bounds 1/3, 1/2, 3/5, 2/3; a confidence equal to its bound passes.
  EXPECT_EQ(FactorCount({0.9, 0.5, 0.5, 0.45, 0.1}, 2.0), 3);
  EXPECT_EQ(FactorCount({0.9, 0.34, 0.2, 0.1}, 2.0), 2);
  // A larger factor is more permissive.
  EXPECT_EQ(FactorCount({0.6, 0.55, 0.5, 0.45}, 1.0), 1);
  EXPECT_EQ(FactorCount({0.6, 0.55, 0.5, 0.45}, 3.0), 4);
}

// ---------------------------------------------------------------------------------------------
// Sampler behaviour on a small random model (vocab 300, mask 299, EOS 298).

class FastSamplerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new unmask::testing::TempDir();
    unmask::testing::WriteRandomCheckpoint(dir_->path(), unmask::testing::SmallConfig(), 2);
    auto loaded = model::LladaModel::Load(dir_->path(), model::ModelOptions{});
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    model_ = loaded->release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete dir_;
  }
  static GenerationParams Params() {
    GenerationParams p;
    p.gen_length = 24;
    p.block_length = 8;
    p.steps = 12;
    p.mask_id = 299;
    p.eos_id = 298;
    p.eot_id = 297;
    return p;
  }
  static PromptBatch Prompt() {
    PromptBatch prompts;
    prompts.ids = {{1, 2, 3, 4, 5}};
    return prompts;
  }
  static unmask::testing::TempDir* dir_;
  static model::LladaModel* model_;
};
unmask::testing::TempDir* FastSamplerTest::dir_ = nullptr;
model::LladaModel* FastSamplerTest::model_ = nullptr;

TEST_F(FastSamplerTest, EveryModeUnmasksEachPositionOnceInsideItsBlock) {
  PromptBatch prompts;
  prompts.ids = {{1, 2, 3, 4, 5}, {7, 8}};  // left padding
  for (SamplerMode mode : LladaSamplerModes()) {
    std::vector<std::set<std::int64_t>> seen(2);
    std::int64_t events = 0;
    FastOptions o;
    o.early_stop = false;
    auto r = Generate(mode, *model_, prompts, Params(), o, [&](const StepEvent& ev) {
      EXPECT_EQ(ev.step, events) << SamplerModeName(mode);
      ++events;
      for (int row = 0; row < 2; ++row) {
        for (std::size_t j = 0; j < ev.positions[row].size(); ++j) {
          const auto pos = ev.positions[row][j];
          EXPECT_TRUE(seen[row].insert(pos).second) << SamplerModeName(mode) << ": position " << pos << " twice";
          EXPECT_EQ(pos / 8, ev.block) << SamplerModeName(mode) << ": outside the current block";
        }
      }
      return true;
    });
    ASSERT_TRUE(r.ok()) << SamplerModeName(mode) << ": " << r.status().ToString();
    EXPECT_STREQ(r->sampler, SamplerModeName(mode));
    EXPECT_EQ(r->steps_run, events);
    for (int row = 0; row < 2; ++row) {
      EXPECT_EQ(seen[row].size(), 24u) << SamplerModeName(mode);
      for (auto id : r->output[row]) EXPECT_NE(id, 299) << SamplerModeName(mode) << ": a mask was left";
    }
  }
}

TEST_F(FastSamplerTest, ThresholdZeroUnmasksAWholeBlockPerStep) {
  for (CacheKind cache : {CacheKind::kNone, CacheKind::kPrefix, CacheKind::kDual}) {
    FastOptions o = Options(cache, DecodeRule::kThreshold);
    o.threshold = 0.0;
    std::vector<StepEvent> events;
    auto r = FastGenerate(*model_, Prompt(), Params(), o, [&](const StepEvent& ev) {
      events.push_back(ev);
      return true;
    });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    // With a cache, Fast-dLLM runs one cached forward after a block's first step even when that
    // step unmasked the whole block; it unmasks nothing.
    const std::int64_t per_block = cache == CacheKind::kNone ? 1 : 2;
    ASSERT_EQ(r->steps_run, 3 * per_block) << r->sampler;
    for (std::size_t i = 0; i < events.size(); ++i) {
      EXPECT_EQ(events[i].block, static_cast<std::int64_t>(i) / per_block);
      EXPECT_EQ(events[i].step_in_block, static_cast<std::int64_t>(i) % per_block);
      EXPECT_EQ(events[i].positions[0].size(), events[i].step_in_block == 0 ? 8u : 0u);
    }
    // One step per block is what the schedule does with steps == num_blocks: same output.
    GenerationParams one = Params();
    one.steps = 3;
    auto reference = ReferenceGenerate(*model_, Prompt(), one);
    ASSERT_TRUE(reference.ok());
    EXPECT_EQ(r->output, reference->output) << r->sampler;
  }
}

TEST_F(FastSamplerTest, ThresholdAboveOneUnmasksOneTokenPerStep) {
  GenerationParams p = Params();
  p.steps = p.gen_length;  // the reference schedule is then one token per step too
  auto reference = ReferenceGenerate(*model_, Prompt(), p);
  ASSERT_TRUE(reference.ok());
  FastOptions o = Options(CacheKind::kNone, DecodeRule::kThreshold);
  o.threshold = 1.01;
  std::int64_t events = 0;
  auto r = FastGenerate(*model_, Prompt(), Params(), o, [&](const StepEvent& ev) {
    EXPECT_EQ(ev.positions[0].size(), 1u);
    EXPECT_EQ(ev.step_in_block, events % 8);
    ++events;
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->steps_run, 24) << "one token per step, whatever `steps` says";
  EXPECT_EQ(r->output, reference->output) << "top-1 per step is the reference's one-per-step schedule";

  // A vanishing factor also leaves only the most confident token per step, except that, as in
  // Fast-dLLM's loop, the last two masked tokens of a block go together (only the last failed).
  FastOptions f = Options(CacheKind::kNone, DecodeRule::kFactor);
  f.factor = 1e-12;
  std::vector<std::size_t> counts;
  auto rf = FastGenerate(*model_, Prompt(), Params(), f, [&](const StepEvent& ev) {
    counts.push_back(ev.positions[0].size());
    return true;
  });
  ASSERT_TRUE(rf.ok());
  EXPECT_EQ(rf->steps_run, 21);
  const std::vector<std::size_t> block = {1, 1, 1, 1, 1, 1, 2};
  std::vector<std::size_t> expected;
  for (int b = 0; b < 3; ++b) expected.insert(expected.end(), block.begin(), block.end());
  EXPECT_EQ(counts, expected);
}

TEST_F(FastSamplerTest, ThresholdUnmasksExactlyTheConfidentTokensOfAStep) {
  // A threshold the model sometimes reaches: every step unmasks the tokens at or above it
  // (at least one), so the step count lies strictly between 3 (whole blocks) and 24.
  FastOptions o = Options(CacheKind::kNone, DecodeRule::kThreshold);
  o.threshold = 0.5;
  std::size_t most = 0;
  auto r = FastGenerate(*model_, Prompt(), Params(), o, [&](const StepEvent& ev) {
    most = std::max(most, ev.positions[0].size());
    return true;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_GT(most, 1u) << "no step unmasked more than one token; pick a lower threshold for this model";
  EXPECT_LT(r->steps_run, 24);
  EXPECT_GT(r->steps_run, 3);
}

TEST_F(FastSamplerTest, EarlyStopFillsEosAfterABlockThatEndsInEos) {
  GenerationParams p = Params();
  auto plain = FastGenerate(*model_, Prompt(), p, Options(CacheKind::kNone));
  ASSERT_TRUE(plain.ok());
  // Make the token that ends block 0 the EOS id: block 0 decodes the same (EOS only matters to
  // early stop here), then the rest of the row must be filled with it.
  p.eos_id = plain->output[0][7];
  std::vector<StepEvent> events;
  auto stopped = FastGenerate(*model_, Prompt(), p, Options(CacheKind::kNone, DecodeRule::kSchedule, true),
                              [&](const StepEvent& ev) {
                                events.push_back(ev);
                                return true;
                              });
  ASSERT_TRUE(stopped.ok()) << stopped.status().ToString();
  EXPECT_EQ(stopped->steps_run, 4) << "only block 0's steps (12 steps / 3 blocks)";
  for (int i = 0; i < 8; ++i) EXPECT_EQ(stopped->output[0][i], plain->output[0][i]);
  for (int i = 8; i < 24; ++i) EXPECT_EQ(stopped->output[0][i], p.eos_id) << "position " << i;
  // The last event carries the block's last unmasked tokens plus the 16 filled positions.
  ASSERT_EQ(events.size(), 4u);
  std::set<std::int64_t> last(events.back().positions[0].begin(), events.back().positions[0].end());
  for (std::int64_t i = 8; i < 24; ++i) EXPECT_TRUE(last.count(i)) << "filled position " << i << " not reported";

  // Off: the same EOS id changes nothing.
  auto off = FastGenerate(*model_, Prompt(), p, Options(CacheKind::kNone));
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->output, plain->output);
  EXPECT_EQ(off->steps_run, 12);
}

TEST_F(FastSamplerTest, EarlyStopIgnoresEosThatIsNotTheLastTokenOfABlock) {
  GenerationParams p = Params();
  auto plain = FastGenerate(*model_, Prompt(), p, Options(CacheKind::kNone));
  ASSERT_TRUE(plain.ok());
  const auto& out = plain->output[0];
  std::set<std::int64_t> block_ends = {out[7], out[15], out[23]};
  std::int64_t inner = -1;
  for (int i = 0; i < 24 && inner < 0; ++i)
    if (!block_ends.count(out[i])) inner = out[i];
  ASSERT_GE(inner, 0) << "every generated token also ends a block; change the prompt";
  p.eos_id = inner;
  auto r = FastGenerate(*model_, Prompt(), p, Options(CacheKind::kDual, DecodeRule::kSchedule, true));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->steps_run, 12);
}

TEST_F(FastSamplerTest, EarlyStopInABatchStopsOnlyTheRowThatEnded) {
  PromptBatch prompts;
  prompts.ids = {{1, 2, 3, 4, 5}, {9, 8, 7, 6, 5}};
  GenerationParams p = Params();
  auto plain = FastGenerate(*model_, prompts, p, Options(CacheKind::kNone));
  ASSERT_TRUE(plain.ok());
  p.eos_id = plain->output[0][7];
  if (plain->output[1][7] == p.eos_id || plain->output[1][15] == p.eos_id) GTEST_SKIP() << "both rows end in it";
  auto r = FastGenerate(*model_, prompts, p, Options(CacheKind::kNone, DecodeRule::kSchedule, true));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->steps_run, 12) << "row 1 still needs its blocks";
  for (int i = 8; i < 24; ++i) EXPECT_EQ(r->output[0][i], p.eos_id);
  EXPECT_EQ(r->output[1], plain->output[1]) << "rows are independent";
}

TEST_F(FastSamplerTest, EveryModeCancelsWhenTheCallbackSaysSo) {
  for (SamplerMode mode : LladaSamplerModes()) {
    int calls = 0;
    auto r = Generate(mode, *model_, Prompt(), Params(), FastOptions{}, [&](const StepEvent&) { return ++calls < 3; });
    EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << SamplerModeName(mode);
    EXPECT_THAT(r.status().message(), HasSubstr("after step 2")) << SamplerModeName(mode);
    EXPECT_EQ(calls, 3) << SamplerModeName(mode);
  }
}

TEST_F(FastSamplerTest, EveryModeRefusesInvalidParamsBeforeRunning) {
  std::vector<std::function<void(GenerationParams&)>> edits = {
      [](GenerationParams& p) { p.block_length = 5; },
      [](GenerationParams& p) { p.steps = 4; },  // not divisible by 3 blocks
      [](GenerationParams& p) { p.temperature = -1; },
      [](GenerationParams& p) { p.mask_id = 300; },
  };
  for (SamplerMode mode : LladaSamplerModes()) {
    for (const auto& edit : edits) {
      GenerationParams p = Params();
      edit(p);
      bool called = false;
      auto r = Generate(mode, *model_, Prompt(), p, FastOptions{}, [&](const StepEvent&) { return called = true; });
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << SamplerModeName(mode);
      EXPECT_FALSE(called) << SamplerModeName(mode);
    }
  }
}

TEST_F(FastSamplerTest, InvalidFastOptionsAreRefused) {
  FastOptions nan_threshold;
  nan_threshold.threshold = std::numeric_limits<double>::quiet_NaN();
  FastOptions negative_threshold;
  negative_threshold.threshold = -0.1;
  FastOptions zero_factor;
  zero_factor.factor = 0;
  for (const FastOptions& o : {nan_threshold, negative_threshold, zero_factor}) {
    auto r = Generate(SamplerMode::kDualCacheThreshold, *model_, Prompt(), Params(), o);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_THAT(ValidateFastOptions(zero_factor).message(), HasSubstr("factor: must be a finite number > 0, got 0"));
  EXPECT_THAT(ValidateFastOptions(negative_threshold).message(), HasSubstr("threshold: must be a finite number >= 0, got -0.1"));
}

TEST_F(FastSamplerTest, SeededSamplingIsReproducible) {
  GenerationParams p = Params();
  p.temperature = 1.0;
  p.seed = 7;
  for (CacheKind cache : {CacheKind::kNone, CacheKind::kDual}) {
    auto a = FastGenerate(*model_, Prompt(), p, Options(cache));
    auto b = FastGenerate(*model_, Prompt(), p, Options(cache));
    GenerationParams q = p;
    q.seed = 8;
    auto c = FastGenerate(*model_, Prompt(), q, Options(cache));
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    EXPECT_EQ(a->output, b->output);
    EXPECT_NE(a->output, c->output);
  }
}

// ---------------------------------------------------------------------------------------------
// The registry.

class LogitsOnlyBackend : public model::ModelBackend {
 public:
  explicit LogitsOnlyBackend(const model::LladaModel& m) : m_(m) {}
  at::Tensor Logits(const at::Tensor& ids, const at::Tensor& mask) const override { return m_.Logits(ids, mask); }
  const checkpoint::LladaConfig& config() const override { return m_.config(); }
  c10::Device device() const override { return m_.device(); }

 private:
  const model::LladaModel& m_;
};

TEST_F(FastSamplerTest, RegistryParsesEveryNameAndRunsTheMode) {
  for (SamplerMode mode : LladaSamplerModes()) {
    auto parsed = ParseSamplerMode(SamplerModeName(mode));
    ASSERT_TRUE(parsed.ok()) << SamplerModeName(mode);
    EXPECT_EQ(*parsed, mode);
  }
  EXPECT_EQ(*ParseSamplerMode("block_logits+threshold"), SamplerMode::kThreshold);
  EXPECT_EQ(*ParseSamplerMode("dual_cache+factor"), SamplerMode::kDualCacheFactor);
  auto bad = ParseSamplerMode("triple_cache");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("'triple_cache' is not one of reference, block_logits"));

  // Reference through the registry is the reference.
  auto via = Generate(SamplerMode::kReference, *model_, Prompt(), Params());
  auto direct = ReferenceGenerate(*model_, Prompt(), Params());
  ASSERT_TRUE(via.ok() && direct.ok());
  EXPECT_EQ(via->output, direct->output);
  EXPECT_STREQ(via->sampler, "reference");

  // The mode, not options.cache, decides the cache.
  FastOptions o;
  o.cache = CacheKind::kNone;
  o.threshold = 0.0;
  auto dual = Generate(SamplerMode::kDualCacheThreshold, *model_, Prompt(), Params(), o);
  ASSERT_TRUE(dual.ok());
  EXPECT_STREQ(dual->sampler, "dual_cache+threshold");
  EXPECT_EQ(dual->steps_run, 6) << "threshold 0 from the options was not used (a block and Fast-dLLM's second forward)";
}

TEST_F(FastSamplerTest, FastModesNeedTheLladaModel) {
  LogitsOnlyBackend backend(*model_);
  EXPECT_TRUE(Generate(SamplerMode::kReference, backend, Prompt(), Params()).ok());
  auto r = Generate(SamplerMode::kBlockLogits, backend, Prompt(), Params());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("block_logits"));
}

}  // namespace
}  // namespace unmask::sampler
