// tokenizer.json inputs found by fuzz/tokenizer_json_fuzz.cc: a token id near 2^30 made the BPE
// model size its id table to a billion entries (31 GB) before anything else was checked.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/tokenizer/tokenizer.h"
#include "tests/fuzz/regression_input.h"

namespace unmask::tokenizer {
namespace {

using ::testing::HasSubstr;
using unmask::testing::RegressionInput;

Status Load(const std::string& name) {
  return Tokenizer::FromJson(RegressionInput("tokenizer_json", name), "tokenizer.json").status();
}

// The fuzzer's input, as found: "model.vocab" gives "b" the id 986666666.
TEST(TokenizerRegressionTest, VocabIdNearABillionIsRefusedByName) {
  Status s = Load("vocab-id-986666666.json");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("model.vocab['b']: expected an id in [0, 2^24), got 986666666"));
}

// The same table is sized by the added tokens' ids.
TEST(TokenizerRegressionTest, AddedTokenIdAtInt32MaxIsRefusedByName) {
  Status s = Load("added-token-id-2e31-minus-1.json");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("added_tokens[0].id: expected an id in [0, 2^24), got 2147483647"));
}

// The bound itself: the largest id below it loads, and decodes.
TEST(TokenizerRegressionTest, TheLargestIdBelowTheBoundIsAccepted) {
  const std::string json = R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 16777215}, "merges": []}})";
  auto tok = Tokenizer::FromJson(json, "tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->id_limit(), 16777216);
  auto text = (*tok)->Decode(std::vector<int32_t>{16777215}, /*skip_special_tokens=*/false);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "b");
}

}  // namespace
}  // namespace unmask::tokenizer
