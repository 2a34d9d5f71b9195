// The samplers' inputs: the transfer schedule, prompt batches (the parameters themselves:
// tests/generation).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/sampler/sampler_params.h"
#include "common/sampler/transfer_schedule.h"

namespace unmask::sampler {
namespace {

using ::testing::HasSubstr;

TEST(TransferScheduleTest, BasePlusRemainderOnTheFirstSteps) {
  EXPECT_EQ(NumTransferTokens(10, 4), (std::vector<std::int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(NumTransferTokens(8, 8), (std::vector<std::int64_t>(8, 1)));
  EXPECT_EQ(NumTransferTokens(3, 5), (std::vector<std::int64_t>{1, 1, 1, 0, 0}));
  EXPECT_EQ(NumTransferTokens(0, 2), (std::vector<std::int64_t>{0, 0}));
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
