// config.json parsing and checking a checkpoint against it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/checkpoint/llada_config.h"
#include "tests/fixtures/temp_checkpoint.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::checkpoint {
namespace {

using ::testing::HasSubstr;
using unmask::testing::ReadFile;
using unmask::testing::ReadHeader;
using unmask::testing::RewriteHeader;
using unmask::testing::TempDir;

TEST(LladaConfigTest, ReadsTheGoldenConfig) {
  auto c = LladaConfig::FromFile(unmask::testing::TestDataPath("tiny-llada/config.json"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->d_model, 64);
  EXPECT_EQ(c->n_heads, 4);
  EXPECT_EQ(c->n_kv_heads, 4);
  EXPECT_EQ(c->n_layers, 2);
  EXPECT_EQ(c->mlp_hidden_size, 128);
  EXPECT_EQ(c->vocab_size, 126464);
  EXPECT_EQ(c->embedding_size, 126464);
  EXPECT_DOUBLE_EQ(c->rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(c->rms_norm_eps, 1e-5);
  EXPECT_EQ(c->max_sequence_length, 4096);
  EXPECT_EQ(c->mask_token_id, 126336);
  EXPECT_EQ(c->eos_token_id, 126081);
  EXPECT_EQ(c->pad_token_id, 126081);
  EXPECT_FALSE(c->weight_tying);
}

std::string GoldenWith(const std::string& key, const nlohmann::json& value) {
  auto j = nlohmann::json::parse(ReadFile(unmask::testing::TestDataPath("tiny-llada/config.json")));
  if (value.is_null()) {
    j.erase(key);
  } else {
    j[key] = value;
  }
  return j.dump();
}

TEST(LladaConfigTest, RefusesUnsupportedFeaturesByName) {
  struct Case {
    const char* key;
    nlohmann::json value;
  } cases[] = {
      {"alibi", true},           {"include_bias", true},        {"include_qkv_bias", true},
      {"block_type", "sequential"}, {"layer_norm_type", "default"}, {"activation_type", "gelu"},
      {"rope", false},           {"attention_layer_norm", true}, {"scale_logits", true},
      {"bias_for_layer_norm", true}, {"input_emb_norm", true},  {"block_group_size", 2},
  };
  for (const auto& c : cases) {
    auto parsed = LladaConfig::FromJsonText(GoldenWith(c.key, c.value), "config.json");
    EXPECT_EQ(parsed.status().code(), StatusCode::kUnimplemented) << c.key;
    EXPECT_THAT(parsed.status().message(), HasSubstr(std::string("'") + c.key + "'")) << c.key;
    EXPECT_THAT(parsed.status().message(), HasSubstr("not supported")) << c.key;
  }
}

TEST(LladaConfigTest, RefusesBadValuesNamingTheField) {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* expected;
  } cases[] = {
      {"d_model", nullptr, "missing field 'd_model'"},
      {"n_layers", "two", "field 'n_layers' has the wrong type"},
      {"d_model", 66, "'d_model' (66) is not divisible by 'n_heads' (4)"},
      {"n_kv_heads", 3, "'n_heads' is not divisible by 'n_kv_heads'"},
      {"n_heads", 0, "'n_heads' must be positive"},
      {"embedding_size", 100, "'embedding_size' is smaller than 'vocab_size'"},
      {"mask_token_id", 999999, "'mask_token_id' = 999999 is outside the vocabulary"},
      {"rms_norm_eps", -1.0, "'rms_norm_eps' must be positive"},
  };
  for (const auto& c : cases) {
    auto parsed = LladaConfig::FromJsonText(GoldenWith(c.key, c.value), "config.json");
    EXPECT_FALSE(parsed.ok()) << c.key;
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.expected)) << c.key;
  }
  EXPECT_THAT(LladaConfig::FromJsonText("{not json", "x/config.json").status().message(),
              HasSubstr("x/config.json: not well-formed JSON"));
  EXPECT_EQ(LladaConfig::FromFile("/nonexistent/config.json").status().code(), StatusCode::kNotFound);
}

TEST(LladaConfigTest, JsonRoundTripKeepsEveryField) {
  LladaConfig c = unmask::testing::SmallConfig();
  c.weight_tying = true;
  auto back = LladaConfig::FromJsonText(c.ToJsonText(), "roundtrip");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJsonText(), c.ToJsonText());
  EXPECT_EQ(ExpectedTensors(*back).size(), 1u + 9u * 2u + 1u);  // no separate LM head when tied
}

TEST(ValidateCheckpointTest, ShapeDisagreeingWithConfigNamesTensorAndFile) {
  TempDir dir;
  LladaConfig written = unmask::testing::SmallConfig();
  unmask::testing::WriteRandomCheckpoint(dir.path(), written, 2);
  LladaConfig other = written;
  other.mlp_hidden_size = 96;
  auto ckpt = Checkpoint::Open(dir.path());
  ASSERT_TRUE(ckpt.ok());
  Status s = ValidateCheckpoint(other, **ckpt);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("tensor 'model.transformer.blocks.0.ff_proj.weight' has shape [64, 32] but config.json implies [96, 32]"));
  EXPECT_THAT(s.message(), HasSubstr(".safetensors"));
  EXPECT_TRUE(ValidateCheckpoint(written, **ckpt).ok());
}

TEST(ValidateCheckpointTest, MissingTensorIsNamed) {
  TempDir dir;
  LladaConfig config = unmask::testing::SmallConfig();
  unmask::testing::WriteRandomCheckpoint(dir.path(), config, 1);
  const std::string path = dir.File("model.safetensors");
  auto header = nlohmann::json::parse(ReadHeader(path));
  // Rename the last tensor (the LM head) so that the data stays fully indexed.
  auto head = header["model.transformer.ff_out.weight"];
  header.erase("model.transformer.ff_out.weight");
  header["model.transformer.lm_head.weight"] = head;
  RewriteHeader(path, header.dump());
  auto ckpt = Checkpoint::Open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  Status s = ValidateCheckpoint(config, **ckpt);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("tensor 'model.transformer.ff_out.weight' is missing"));
}

TEST(ValidateCheckpointTest, IntegerWeightsAreRefused) {
  TempDir dir;
  LladaConfig config = unmask::testing::SmallConfig();
  unmask::testing::WriteRandomCheckpoint(dir.path(), config, 1);
  const std::string path = dir.File("model.safetensors");
  auto header = nlohmann::json::parse(ReadHeader(path));
  header["model.transformer.ln_f.weight"]["dtype"] = "I16";
  RewriteHeader(path, header.dump());
  auto ckpt = Checkpoint::Open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  EXPECT_THAT(ValidateCheckpoint(config, **ckpt).message(),
              HasSubstr("tensor 'model.transformer.ln_f.weight' has dtype I16"));
}

}  // namespace
}  // namespace unmask::checkpoint
