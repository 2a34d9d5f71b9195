// Generation parameters: validation messages, the transfer schedule, prompt batches.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/sampler/generation_params.h"
#include "common/sampler/transfer_schedule.h"
#include "tests/engine/temp_checkpoint.h"

namespace unmask::sampler {
namespace {

using ::testing::HasSubstr;

TEST(TransferScheduleTest, BasePlusRemainderOnTheFirstSteps) {
  EXPECT_EQ(NumTransferTokens(10, 4), (std::vector<std::int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(NumTransferTokens(8, 8), (std::vector<std::int64_t>(8, 1)));
  EXPECT_EQ(NumTransferTokens(3, 5), (std::vector<std::int64_t>{1, 1, 1, 0, 0}));
  EXPECT_EQ(NumTransferTokens(0, 2), (std::vector<std::int64_t>{0, 0}));
}

TEST(GenerationParamsTest, DefaultsAreValid) {
  GenerationParams p;
  EXPECT_TRUE(ValidateParams(p, checkpoint::LladaConfig{}, 10).ok());
}

TEST(GenerationParamsTest, RefusesInvalidCombinationsNamingTheField) {
  const checkpoint::LladaConfig config;
  struct Case {
    std::function<void(GenerationParams&)> edit;
    const char* expected;
  } cases[] = {
      {[](auto& p) { p.gen_length = 100; p.block_length = 32; }, "gen_length (100) must be divisible by block_length (32)"},
      {[](auto& p) { p.gen_length = 128; p.block_length = 32; p.steps = 30; },
       "steps (30) must be divisible by the number of blocks (gen_length / block_length = 4)"},
      {[](auto& p) { p.gen_length = 32; p.block_length = 32; p.steps = 64; }, "steps (64) must be <= gen_length (32)"},
      {[](auto& p) { p.steps = 0; }, "steps must be >= 1"},
      {[](auto& p) { p.gen_length = 0; }, "gen_length must be >= 1"},
      {[](auto& p) { p.block_length = -4; }, "block_length must be >= 1"},
      {[](auto& p) { p.temperature = -0.5; }, "temperature must be a finite number >= 0"},
      {[](auto& p) { p.cfg_scale = -1; }, "cfg_scale must be a finite number >= 0"},
      {[](auto& p) { p.mask_id = 1 << 20; }, "mask_id (1048576) must be in [0, 126464)"},
      {[](auto& p) { p.gen_length = 4096; p.block_length = 4096; }, "exceeds the model's max_sequence_length (4096)"},
  };
  for (const auto& c : cases) {
    GenerationParams p;
    c.edit(p);
    Status s = ValidateParams(p, config, 10);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.expected;
    EXPECT_THAT(s.message(), HasSubstr(c.expected));
  }
}

TEST(GenerationParamsTest, ParsesRemasking) {
  EXPECT_EQ(*ParseRemasking("random"), Remasking::kRandom);
  EXPECT_EQ(*ParseRemasking("low_confidence"), Remasking::kLowConfidence);
  auto bad = ParseRemasking("top_k");
  EXPECT_THAT(bad.status().message(), HasSubstr("remasking 'top_k' is not one of low_confidence, random"));
}

TEST(PromptBatchTest, LeftPadsRowsOfDifferentLengths) {
  PromptBatch in;
  in.ids = {{5, 6, 7}, {8}};
  auto out = NormalizePromptBatch(in, /*pad_id=*/0, /*vocab_size=*/100);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->ids, (std::vector<std::vector<std::int64_t>>{{5, 6, 7}, {0, 0, 8}}));
  EXPECT_EQ(out->attention_mask, (std::vector<std::vector<std::int64_t>>{{1, 1, 1}, {0, 0, 1}}));
}

TEST(PromptBatchTest, EqualRowsNeedNoMask) {
  PromptBatch in;
  in.ids = {{1, 2}, {3, 4}};
  auto out = NormalizePromptBatch(in, 0, 100);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->attention_mask.empty());
}

TEST(PromptBatchTest, RefusesBadRows) {
  PromptBatch in;
  EXPECT_THAT(NormalizePromptBatch(in, 0, 100).status().message(), HasSubstr("prompt batch is empty"));
  in.ids = {{1, 2}, {3, 400}};
  EXPECT_THAT(NormalizePromptBatch(in, 0, 100).status().message(),
              HasSubstr("prompt row 1: token id 400 is outside the vocabulary [0, 100)"));
  in.ids = {{1, 2}};
  in.attention_mask = {{1}};
  EXPECT_THAT(NormalizePromptBatch(in, 0, 100).status().message(), HasSubstr("attention_mask row 0"));
}

}  // namespace
}  // namespace unmask::sampler
