// Dream's config.json (issue 30): the architecture from `architectures` / `model_type`, the Qwen2
// fields mapped onto LladaConfig (q/k/v biases, GQA, RoPE theta, tying), the ids from config.json
// and tokenizer_config.json (<|im_end|> ends a turn), the tensor list and parameter count against
// the real tiny checkpoints, the written-back config, and bad configs refused with the field named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "common/checkpoint/checkpoint.h"
#include "common/checkpoint/dtype.h"
#include "common/checkpoint/llada_config.h"
#include "tests/fixtures/temp_checkpoint.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::checkpoint {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

json ConfigOf(const std::string& name) {
  return json::parse(unmask::testing::ReadFile(unmask::testing::TestDataPath(name + "/config.json")));
}

TEST(DreamConfigTest, ReadsDream) {
  auto c = LladaConfig::FromFile(unmask::testing::TestDataPath("tiny-dream/config.json"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, Architecture::kDream);
  EXPECT_STREQ(ArchitectureName(c->architecture), "DreamModel");
  EXPECT_EQ(c->d_model, 64);
  EXPECT_EQ(c->n_heads, 4);
  EXPECT_EQ(c->n_kv_heads, 2);
  EXPECT_EQ(c->n_layers, 3);
  EXPECT_EQ(c->head_dim(), 16);
  EXPECT_EQ(c->rotary_dim(), 16);
  EXPECT_EQ(c->mlp_hidden_size, 128);
  EXPECT_EQ(c->rope_theta, 1e6);
  EXPECT_EQ(c->rms_norm_eps, 1e-6);
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_FALSE(c->qk_norm);
  EXPECT_FALSE(c->fused_qkv());
  EXPECT_TRUE(c->shifted_prediction());
  EXPECT_FALSE(c->weight_tying);
  EXPECT_EQ(c->moe.num_experts, 0);
  EXPECT_EQ(c->mask_token_id, 503);
  EXPECT_EQ(c->eos_token_id, 480);
  EXPECT_EQ(c->pad_token_id, 480);
  EXPECT_EQ(c->eot_token_id, 482) << "<|im_end|> from tokenizer_config.json";
  auto tied = LladaConfig::FromFile(unmask::testing::TestDataPath("tiny-dream-tied/config.json"));
  ASSERT_TRUE(tied.ok()) << tied.status().ToString();
  EXPECT_TRUE(tied->weight_tying);
  EXPECT_EQ(tied->n_kv_heads, 1);
}

// Dream-v0-Instruct-7B's config.json as published (Dream-org/Dream-v0-Instruct-7B, read from a public
// copy of the checkpoint's files): every field it has is read or knowingly ignored, and the shape
// gives the published model.safetensors.index.json's 339 tensors and 15,231,233,024 bf16 bytes.
TEST(DreamConfigTest, ReadsThePublishedDreamV0InstructConfig) {
  const char* published = R"({
  "_name_or_path": "Dream-org/Dream-v0-Instruct-7B",
  "architectures": ["DreamModel"],
  "attention_dropout": 0.0,
  "auto_map": {"AutoConfig": "configuration_dream.DreamConfig", "AutoModel": "modeling_dream.DreamModel"},
  "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 3584,
  "initializer_range": 0.02, "intermediate_size": 18944, "mask_token_id": 151666,
  "max_position_embeddings": 131072, "max_window_layers": 28, "model_type": "Dream",
  "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4, "pad_token_id": 151643,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000.0, "sliding_window": null,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.46.2",
  "use_cache": true, "use_mrope": false, "use_sliding_window": false, "vocab_size": 152064
})";
  auto c = LladaConfig::FromJsonText(published, "config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, Architecture::kDream);
  EXPECT_EQ(c->d_model, 3584);
  EXPECT_EQ(c->n_layers, 28);
  EXPECT_EQ(c->n_heads, 28);
  EXPECT_EQ(c->n_kv_heads, 4);
  EXPECT_EQ(c->head_dim(), 128);
  EXPECT_EQ(c->mlp_hidden_size, 18944);
  EXPECT_EQ(c->vocab_size, 152064);
  EXPECT_EQ(c->mask_token_id, 151666);
  EXPECT_EQ(c->eos_token_id, 151643);
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_FALSE(c->weight_tying);
  EXPECT_EQ(ExpectedTensors(*c).size(), 339u);
  EXPECT_EQ(c->parameter_count(), 15231233024 / 2);
}

TEST(DreamConfigTest, TheDefaultsAreDreamConfigs) {
  json j = ConfigOf("tiny-dream");
  for (const char* key : {"rms_norm_eps", "rope_theta", "max_position_embeddings", "tie_word_embeddings"}) j.erase(key);
  auto c = LladaConfig::FromJsonText(j.dump(), "config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rms_norm_eps, 1e-6);
  EXPECT_EQ(c->rope_theta, 10000.0);
  EXPECT_EQ(c->max_sequence_length, 32768);
  EXPECT_FALSE(c->weight_tying);
  // model_type alone names it too.
  j.erase("architectures");
  auto by_type = LladaConfig::FromJsonText(j.dump(), "config.json");
  ASSERT_TRUE(by_type.ok()) << by_type.status().ToString();
  EXPECT_EQ(by_type->architecture, Architecture::kDream);
}

TEST(DreamConfigTest, TensorListAndParameterCountMatchTheCheckpoints) {
  for (const char* name : {"tiny-dream", "tiny-dream-tied", "tiny-dream-confident"}) {
    const std::string dir = unmask::testing::TestDataPath(name);
    auto c = LladaConfig::FromFile(dir + "/config.json");
    auto ckpt = Checkpoint::Open(dir);
    ASSERT_TRUE(c.ok() && ckpt.ok()) << name;
    EXPECT_TRUE(ValidateCheckpoint(*c, **ckpt).ok()) << name << ": " << ValidateCheckpoint(*c, **ckpt).ToString();
    EXPECT_EQ(ExpectedTensors(*c).size(), (*ckpt)->tensor_names().size()) << name << ": every tensor is read";
    std::int64_t stored = 0;
    for (const auto& t : (*ckpt)->tensor_names()) {
      const TensorRef ref = *(*ckpt)->Find(t);
      stored += static_cast<std::int64_t>(ref.info->nbytes / DTypeSize(ref.info->dtype));
    }
    EXPECT_EQ(c->parameter_count(), stored) << name;
  }
}

TEST(DreamConfigTest, WrittenBackConfigReadsTheSame) {
  auto c = LladaConfig::FromFile(unmask::testing::TestDataPath("tiny-dream/config.json"));
  ASSERT_TRUE(c.ok());
  auto back = LladaConfig::FromJsonText(c->ToJsonText(), "written");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJsonText(), c->ToJsonText());
  EXPECT_EQ(back->architecture, Architecture::kDream);
  EXPECT_TRUE(back->qkv_bias);
  EXPECT_EQ(back->mask_token_id, 503);
  EXPECT_EQ(back->eot_token_id, 482) << "the text alone carries the end-of-turn id";
}

TEST(DreamConfigTest, BadConfigsNameTheField) {
  struct Case {
    std::function<void(json&)> edit;
    const char* says;
  } cases[] = {
      {[](json& j) { j["use_sliding_window"] = true; }, "'use_sliding_window' = true is not supported (sliding-window attention)"},
      {[](json& j) { j["hidden_act"] = "gelu"; }, "'hidden_act'"},
      {[](json& j) { j["rope_scaling"] = {{"type", "yarn"}, {"factor", 4}}; }, "'rope_scaling'"},
      {[](json& j) { j.erase("intermediate_size"); }, "missing field 'intermediate_size'"},
      {[](json& j) { j["intermediate_size"] = "wide"; }, "field 'intermediate_size' has the wrong type"},
      {[](json& j) { j["intermediate_size"] = 0; }, "'intermediate_size'"},
      {[](json& j) { j["num_key_value_heads"] = 3; }, "'num_attention_heads' is not divisible by 'num_key_value_heads'"},
      {[](json& j) { j["hidden_size"] = 66; }, "'hidden_size' (66) is not divisible by 'num_attention_heads' (4)"},
      {[](json& j) { j["mask_token_id"] = 9999; }, "'mask_token_id' = 9999 is outside the vocabulary"},
      {[](json& j) { j["model_type"] = "llada2_moe"; }, "'model_type' = \"llada2_moe\" contradicts 'architectures' (DreamModel)"},
      {[](json& j) { j["architectures"] = {"Qwen2ForCausalLM"}; }, "'architectures' = [\"Qwen2ForCausalLM\"] is not supported"},
      {[](json& j) { j["rope_theta"] = -1; }, "'rope_theta' must be positive"},
  };
  for (const auto& c : cases) {
    json j = ConfigOf("tiny-dream");
    c.edit(j);
    auto parsed = LladaConfig::FromJsonText(j.dump(), "config.json");
    ASSERT_FALSE(parsed.ok()) << c.says;
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.says));
    EXPECT_THAT(parsed.status().message(), HasSubstr("config.json: "));
  }
}

}  // namespace
}  // namespace unmask::checkpoint
