// A likelihood request's context and continuation, encoded as LLaDA's eval_llada.py _encode_pair
// does (common/tokenizer/continuation_text.h), on GPT-2's tokenizer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/tokenizer/continuation_text.h"
#include "tests/tokenizer/test_util.h"

namespace unmask::tokenizer {
namespace {

using testing::Gpt2;

std::vector<std::int64_t> Ids(const std::string& text) {
  auto ids = Gpt2().Encode(text, true);
  EXPECT_TRUE(ids.ok());
  return {ids->begin(), ids->end()};
}

TEST(ContinuationTextTest, TheContinuationIsWhatTheWholeAddsAfterTheContextsTokens) {
  auto pair = EncodeContextAndContinuation(Gpt2(), "In the beginning God", " created the heaven");
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  EXPECT_EQ(pair->ids, Ids("In the beginning God created the heaven"));
  EXPECT_EQ(pair->continuation_tokens, static_cast<std::int64_t>(Ids(" created the heaven").size()));
}

TEST(ContinuationTextTest, TheContextsTrailingSpacesMoveToTheContinuation) {
  // "God " + "created": GPT-2 encodes " created" as one token; a context ending in a space would
  // otherwise leave a lone space token in the context and "created" without its space.
  auto moved = EncodeContextAndContinuation(Gpt2(), "In the beginning God ", "created");
  auto plain = EncodeContextAndContinuation(Gpt2(), "In the beginning God", " created");
  ASSERT_TRUE(moved.ok() && plain.ok());
  EXPECT_EQ(moved->ids, plain->ids);
  EXPECT_EQ(moved->continuation_tokens, 1);
  auto newline = EncodeContextAndContinuation(Gpt2(), "Question: who?\n\n", "Answer");
  ASSERT_TRUE(newline.ok());
  EXPECT_EQ(newline->ids, Ids("Question: who?\n\nAnswer"));
}

TEST(ContinuationTextTest, TheContextsOwnTokensStayWhenTheWholeMergesAcrossTheBoundary) {
  // "news" + "paper": the whole encodes "newspaper" differently from "news" alone; the context
  // keeps its own tokens and the continuation is the rest of the whole's (the official rule).
  auto pair = EncodeContextAndContinuation(Gpt2(), "a news", "paper boy");
  ASSERT_TRUE(pair.ok());
  const auto context = Ids("a news");
  const auto whole = Ids("a newspaper boy");
  ASSERT_GT(whole.size(), context.size());
  ASSERT_NE(std::vector<std::int64_t>(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(context.size())),
            context)
      << "the case must merge across the boundary";
  std::vector<std::int64_t> want = context;
  want.insert(want.end(), whole.begin() + static_cast<std::ptrdiff_t>(context.size()), whole.end());
  EXPECT_EQ(pair->ids, want);
  EXPECT_EQ(pair->continuation_tokens, static_cast<std::int64_t>(whole.size() - context.size()));
}

TEST(ContinuationTextTest, AnEmptyContextScoresTheWholeText) {
  auto pair = EncodeContextAndContinuation(Gpt2(), "", "Let there be light");
  ASSERT_TRUE(pair.ok());
  EXPECT_EQ(pair->ids, Ids("Let there be light"));
  EXPECT_EQ(pair->continuation_tokens, static_cast<std::int64_t>(pair->ids.size()));
}

TEST(ContinuationTextTest, AContinuationOfNoTokensIsRefusedByName) {
  auto pair = EncodeContextAndContinuation(Gpt2(), "In the beginning", "");
  ASSERT_FALSE(pair.ok());
  EXPECT_EQ(pair.status().field(), "continuation");
  EXPECT_THAT(pair.status().message(), ::testing::HasSubstr("encodes to no tokens"));
}

}  // namespace
}  // namespace unmask::tokenizer
