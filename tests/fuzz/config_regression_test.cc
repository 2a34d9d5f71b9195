// config.json inputs found by fuzz/config_json_fuzz.cc: sizes whose products overflowed 64 bits
// or numbers read into a narrower type (undefined behaviour), and a layer count that made the
// loader's tensor list exhaust memory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/checkpoint/llada_config.h"
#include "tests/fuzz/regression_input.h"

namespace unmask::checkpoint {
namespace {

using ::testing::HasSubstr;
using unmask::testing::RegressionInput;

Status Parse(const std::string& name) {
  return LladaConfig::FromJsonText(RegressionInput("config_json", name), "config.json").status();
}

// d_model = 2^62 with mlp_ratio 4: mlp_hidden_size = 4 * d_model overflowed int64.
TEST(ConfigRegressionTest, MlpRatioTimesHugeDModelIsRefused) {
  Status s = Parse("mlp-ratio-overflow.json");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("config.json: 'd_model' = 4611686018427387904 exceeds the supported maximum of 1048576"));
}

// d_model = mlp_hidden_size = 2^40: accepted, then parameter_count() overflowed int64.
TEST(ConfigRegressionTest, SizesWhoseParameterCountOverflowsAreRefused) {
  Status s = Parse("parameter-count-overflow.json");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'d_model' = 1099511627776 exceeds the supported maximum"));
}

// n_layers = 10^9: accepted, then ExpectedTensors() tried to list 9 billion tensors.
TEST(ConfigRegressionTest, BillionLayersAreRefused) {
  Status s = Parse("billion-layers.json");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'n_layers' = 1000000000 exceeds the supported maximum of 4096"));
}

// A refused feature given as a number outside int's range: reading it as int was undefined
// behaviour. It is refused by name like any other unsupported value.
TEST(ConfigRegressionTest, UnsupportedFieldWithAHugeNumberIsRefusedByName) {
  Status s = Parse("block-group-size-1e20.json");
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("config.json: 'block_group_size' = 1e+20 is not supported (grouped blocks)"));
}

// The bounds (llada_config.cc): d_model 2^20, mlp_hidden_size 2^22, n_layers 4096, vocab 2^24,
// max_sequence_length 2^24.
TEST(ConfigRegressionTest, TheLimitsThemselvesAreAccepted) {
  LladaConfig c;
  c.d_model = 1 << 20;
  c.n_heads = c.n_kv_heads = 8;
  c.n_layers = 4096;
  c.mlp_hidden_size = 1 << 22;
  c.vocab_size = c.embedding_size = 1 << 24;
  c.max_sequence_length = 1 << 24;
  auto parsed = LladaConfig::FromJsonText(c.ToJsonText(), "config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_GT(parsed->parameter_count(), 0);
}

}  // namespace
}  // namespace unmask::checkpoint
