// Reference sampler behaviour beyond the golden vectors: step events, cancellation, batches.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "common/model/llada_model.h"
#include "common/sampler/reference_sampler.h"
#include "tests/fixtures/temp_checkpoint.h"

namespace unmask::sampler {
namespace {

using ::testing::HasSubstr;

class ReferenceSamplerTest : public ::testing::Test {
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
    p.gen_length = 16;
    p.block_length = 8;
    p.steps = 8;
    p.mask_id = 299;
    p.eos_id = 298;
    p.eot_id = 297;
    return p;
  }
  static unmask::testing::TempDir* dir_;
  static model::LladaModel* model_;
};
unmask::testing::TempDir* ReferenceSamplerTest::dir_ = nullptr;
model::LladaModel* ReferenceSamplerTest::model_ = nullptr;

TEST_F(ReferenceSamplerTest, EveryPositionIsUnmaskedOnceWithTheFinalToken) {
  PromptBatch prompts;
  prompts.ids = {{1, 2, 3, 4}};
  std::vector<StepEvent> events;
  auto result = ReferenceGenerate(*model_, prompts, Params(), [&](const StepEvent& ev) {
    events.push_back(ev);
    return true;
  });
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(events.size(), 8u);
  std::set<std::int64_t> seen;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& ev = events[i];
    EXPECT_EQ(ev.step, static_cast<std::int64_t>(i));
    EXPECT_EQ(ev.block, static_cast<std::int64_t>(i / 4));
    EXPECT_EQ(ev.step_in_block, static_cast<std::int64_t>(i % 4));
    ASSERT_EQ(ev.positions[0].size(), 2u);  // 8 masks per block over 4 steps
    for (std::size_t j = 0; j < ev.positions[0].size(); ++j) {
      const auto pos = ev.positions[0][j];
      EXPECT_TRUE(seen.insert(pos).second) << "position " << pos << " unmasked twice";
      EXPECT_EQ(pos / 8, ev.block) << "a position outside the current block was unmasked";
      EXPECT_EQ(ev.tokens[0][j], result->output[0][pos]);
    }
  }
  EXPECT_EQ(seen.size(), 16u);
  for (auto id : result->output[0]) EXPECT_NE(id, 299) << "a mask token was left in the output";
}

TEST_F(ReferenceSamplerTest, CallbackReturningFalseCancels) {
  PromptBatch prompts;
  prompts.ids = {{1, 2, 3, 4}};
  int calls = 0;
  auto result = ReferenceGenerate(*model_, prompts, Params(), [&](const StepEvent&) { return ++calls < 3; });
  EXPECT_EQ(result.status().code(), StatusCode::kCancelled);
  EXPECT_THAT(result.status().message(), HasSubstr("after step 2"));
  EXPECT_EQ(calls, 3);
}

TEST_F(ReferenceSamplerTest, InvalidParamsAreRefusedBeforeRunning) {
  PromptBatch prompts;
  prompts.ids = {{1, 2}};
  GenerationParams p = Params();
  p.block_length = 5;
  bool called = false;
  auto result = ReferenceGenerate(*model_, prompts, p, [&](const StepEvent&) { return called = true; });
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(called);
}

TEST_F(ReferenceSamplerTest, BatchedRowsEqualTheRowsRunAlone) {
  PromptBatch both;
  both.ids = {{1, 2, 3, 4}, {9, 8, 7, 6}};
  auto batched = ReferenceGenerate(*model_, both, Params());
  ASSERT_TRUE(batched.ok());
  for (int r = 0; r < 2; ++r) {
    PromptBatch one;
    one.ids = {both.ids[r]};
    auto alone = ReferenceGenerate(*model_, one, Params());
    ASSERT_TRUE(alone.ok());
    EXPECT_EQ(batched->output[r], alone->output[0]) << "row " << r;
  }
}

TEST_F(ReferenceSamplerTest, SeedDecidesSampledOutput) {
  PromptBatch prompts;
  prompts.ids = {{1, 2, 3, 4}};
  GenerationParams p = Params();
  p.temperature = 1.0;
  p.seed = 7;
  auto a = ReferenceGenerate(*model_, prompts, p);
  auto b = ReferenceGenerate(*model_, prompts, p);
  p.seed = 8;
  auto c = ReferenceGenerate(*model_, prompts, p);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->output, b->output);
  EXPECT_NE(a->output, c->output);
}

TEST_F(ReferenceSamplerTest, LogitsEosInfNeverPicksEos) {
  PromptBatch prompts;
  prompts.ids = {{1, 2, 3, 4}};
  GenerationParams p = Params();
  p.logits_eos_inf = true;
  p.temperature = 5.0;  // flat enough that EOS would otherwise appear
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    p.seed = seed;
    auto r = ReferenceGenerate(*model_, prompts, p);
    ASSERT_TRUE(r.ok());
    for (auto id : r->output[0]) EXPECT_NE(id, p.eos_id);
  }
}

TEST_F(ReferenceSamplerTest, ShorterRowsAreLeftPadded) {
  PromptBatch prompts;
  prompts.ids = {{1, 2, 3, 4}, {5}};
  auto r = ReferenceGenerate(*model_, prompts, Params());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->output.size(), 2u);
  EXPECT_EQ(r->output[1].size(), 16u);
}

}  // namespace
}  // namespace unmask::sampler
