// LLaDA-MoE and LLaDA2.x config.json files: the architecture chosen from `architectures` /
// `model_type`, their fields mapped onto LladaConfig, the ids taken from tokenizer_config.json,
// the tensor list and parameter count against the real checkpoints, and bad configs refused with
// the field named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
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

TEST(MoeConfigTest, ReadsLladaMoe) {
  auto c = LladaConfig::FromFile(unmask::testing::TestDataPath("tiny-llada-moe-gqa/config.json"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, Architecture::kLladaMoe) << "model_type is \"llada\": architectures decides";
  EXPECT_EQ(c->d_model, 64);
  EXPECT_EQ(c->n_heads, 4);
  EXPECT_EQ(c->n_kv_heads, 2);
  EXPECT_EQ(c->n_layers, 3);
  EXPECT_EQ(c->head_dim(), 16);
  EXPECT_EQ(c->rotary_dim(), 8);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->fused_qkv());
  EXPECT_EQ(c->mlp_hidden_size, 128);
  EXPECT_EQ(c->moe.num_experts, 8);
  EXPECT_EQ(c->moe.top_k, 2);
  EXPECT_EQ(c->moe.expert_hidden_size, 32);
  EXPECT_EQ(c->moe.shared_hidden_size, 48);
  EXPECT_TRUE(c->moe.expert_bias);
  EXPECT_EQ(c->moe.moe_layers, (std::vector<bool>{false, true, true}));
  EXPECT_DOUBLE_EQ(c->rope_theta, 50000.0);
  EXPECT_EQ(c->vocab_size, 512);
  EXPECT_EQ(c->mask_token_id, 504) << "from tokenizer_config.json's mask_token";
  EXPECT_EQ(c->eos_token_id, 501);
}

TEST(MoeConfigTest, ReadsLlada2) {
  auto c = LladaConfig::FromFile(unmask::testing::TestDataPath("tiny-llada2-grouped/config.json"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, Architecture::kLlada2Moe);
  EXPECT_EQ(c->head_dim(), 32) << "the explicit head_dim, not hidden / heads";
  EXPECT_EQ(c->q_width(), 128);
  EXPECT_EQ(c->kv_width(), 32);
  EXPECT_EQ(c->rotary_dim(), 16);
  EXPECT_TRUE(c->fused_qkv());
  EXPECT_EQ(c->moe.n_group, 4);
  EXPECT_EQ(c->moe.topk_group, 2);
  EXPECT_DOUBLE_EQ(c->moe.routed_scaling_factor, 2.5);
  EXPECT_EQ(c->moe.shared_hidden_size, 64) << "2 shared experts of 32 as one MLP";
  EXPECT_TRUE(c->moe.expert_bias);
  EXPECT_EQ(c->moe.moe_layers, (std::vector<bool>{true, true}));
  EXPECT_DOUBLE_EQ(c->rms_norm_eps, 1e-6);
  EXPECT_EQ(c->mask_token_id, 504);
  EXPECT_EQ(c->eos_token_id, 501) << "LLaDA2's config.json has no eos_token_id: the tokenizer's";
  auto dense_first = LladaConfig::FromFile(unmask::testing::TestDataPath("tiny-llada2/config.json"));
  ASSERT_TRUE(dense_first.ok());
  EXPECT_EQ(dense_first->moe.moe_layers, (std::vector<bool>{false, true, true})) << "first_k_dense_replace 1";
}

TEST(MoeConfigTest, ReadsLlada21AsLlada2WithTokenEditing) {
  json j = ConfigOf("tiny-llada2");
  auto plain = LladaConfig::FromJsonText(j.dump(), "llada2");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_FALSE(plain->token_editing);
  j["model_type"] = "llada21_moe";
  j["num_key_value_heads"] = 0;  // LLaDA2.1's config class: 0 means one K/V head per query head
  auto c = LladaConfig::FromJsonText(j.dump(), "llada21");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, Architecture::kLlada2Moe);
  EXPECT_TRUE(c->token_editing);
  EXPECT_EQ(c->n_kv_heads, c->n_heads);
  EXPECT_EQ(ExpectedTensors(*c).size(), ExpectedTensors(*plain).size());
  auto back = LladaConfig::FromJsonText(c->ToJsonText(), "written");  // what a weight segment carries
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->token_editing);
  EXPECT_EQ(back->ToJsonText(), c->ToJsonText());
}

// LLaDA2.1 checkpoints may say model_type "llada2_moe" and ship configuration_llada2_moe.py /
// modeling_llada2_moe.py like LLaDA2.0's: the modeling file's generate() tells them apart.
TEST(MoeConfigTest, AnLlada2ConfigWithLlada21sModelingFileGeneratesWithTokenEditing) {
  const std::string config = unmask::testing::ReadFile(unmask::testing::TestDataPath("tiny-llada2/config.json"));
  const auto read = [&](const unmask::testing::TempDir& dir) {
    std::ofstream(dir.File("config.json")) << config;
    auto c = LladaConfig::FromFile(dir.File("config.json"));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() && c->token_editing;
  };
  const char* llada21_generate =
      "    def generate(self, inputs=None, temperature=0.0, block_length=32, steps=32, gen_length=2048,\n"
      "                 top_p=None, top_k=None, eos_early_stop=False, minimal_topk=1, threshold=0.95,\n"
      "                 editing_threshold: float = 0.9, max_post_steps: int = 16, eos_id=156892, mask_id=156895):\n";
  const char* llada20_generate =
      "    def generate(self, inputs=None, temperature=0.0, block_length=32, steps=32, gen_length=2048,\n"
      "                 top_p=None, top_k=None, eos_early_stop=False, minimal_topk=1, threshold=0.95):\n";
  unmask::testing::TempDir none, v20, v21;
  EXPECT_FALSE(read(none)) << "no modeling file: LLaDA2.0's generate";
  std::ofstream(v20.File("modeling_llada2_moe.py")) << llada20_generate;
  EXPECT_FALSE(read(v20));
  std::ofstream(v21.File("modeling_llada2_moe.py")) << llada21_generate;
  EXPECT_TRUE(read(v21));
  // The module auto_map names, not a fixed file name.
  unmask::testing::TempDir renamed;
  json j = json::parse(config);
  j["auto_map"]["AutoModelForCausalLM"] = "my_modeling.LLaDA2MoeModelLM";
  std::ofstream(renamed.File("config.json")) << j.dump();
  std::ofstream(renamed.File("modeling_llada2_moe.py")) << llada20_generate;
  std::ofstream(renamed.File("my_modeling.py")) << llada21_generate;
  auto c = LladaConfig::FromFile(renamed.File("config.json"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->token_editing);
  EXPECT_THAT(c->ToJsonText(), HasSubstr("\"llada21_moe\"")) << "what the weight segment carries to executors";
}

TEST(MoeConfigTest, TensorListAndParameterCountMatchTheCheckpoints) {
  for (const char* name :
       {"tiny-llada-moe", "tiny-llada-moe-gqa", "tiny-llada2", "tiny-llada2-grouped", "tiny-llada21", "tiny-llada21-kv0"}) {
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

TEST(MoeConfigTest, WrittenBackConfigReadsTheSame) {
  for (const char* name : {"tiny-llada-moe-gqa", "tiny-llada2", "tiny-llada2-grouped"}) {
    auto c = LladaConfig::FromFile(unmask::testing::TestDataPath(name) + "/config.json");
    ASSERT_TRUE(c.ok());
    auto back = LladaConfig::FromJsonText(c->ToJsonText(), "written");
    ASSERT_TRUE(back.ok()) << name << ": " << back.status().ToString();
    EXPECT_EQ(back->ToJsonText(), c->ToJsonText()) << name;
    EXPECT_EQ(back->mask_token_id, 504) << name << ": the text alone carries the mask id";
    std::vector<std::string> a, b;
    for (const auto& t : ExpectedTensors(*c)) a.push_back(t.name);
    for (const auto& t : ExpectedTensors(*back)) b.push_back(t.name);
    EXPECT_EQ(a, b) << name;
  }
}

// Each edit of a real config and the words its error must contain.
struct BadConfig {
  const char* base;
  std::function<void(json&)> edit;
  const char* expected;
};

TEST(MoeConfigTest, BadConfigsAreRefusedNamingTheField) {
  const std::vector<BadConfig> cases = {
      {"tiny-llada-moe", [](json& j) { j["architectures"] = {"MixtralForCausalLM"}; }, "'architectures'"},
      {"tiny-llada2", [](json& j) { j["model_type"] = "llada3_moe"; }, "'model_type' = \"llada3_moe\" is not supported (llada, lladamoe, llada2_moe, llada21_moe, Dream)"},
      {"tiny-llada2", [](json& j) { j["model_type"] = "llada"; }, "contradicts 'architectures'"},
      {"tiny-llada2-grouped", [](json& j) { j["n_group"] = 3; }, "'num_experts' (16) is not divisible by 'n_group' (3)"},
      {"tiny-llada2-grouped", [](json& j) { j["topk_group"] = 5; }, "'topk_group'"},
      {"tiny-llada2", [](json& j) { j["num_experts_per_tok"] = 17; }, "'num_experts_per_tok' (17) exceeds 'num_experts'"},
      {"tiny-llada-moe", [](json& j) { j["num_experts_per_tok"] = 17; }, "'num_experts_per_tok' (17) exceeds 'num_experts'"},
      {"tiny-llada-moe", [](json& j) { j["num_experts"] = 0; }, "'num_experts' must be positive"},
      {"tiny-llada-moe", [](json& j) { j.erase("shared_expert_intermediate_size"); }, "'shared_expert_intermediate_size'"},
      {"tiny-llada-moe", [](json& j) { j["moe_layer_freq"] = {1}; }, "'moe_layer_freq' has 1 entries"},
      {"tiny-llada-moe", [](json& j) { j.erase("expert_intermediate_size"); }, "missing field 'expert_intermediate_size'"},
      {"tiny-llada-moe", [](json& j) { j["clip_qkv"] = 8; }, "'clip_qkv'"},
      {"tiny-llada2", [](json& j) { j.erase("use_bias"); }, "'use_bias'"},
      {"tiny-llada2", [](json& j) { j["rope_scaling"] = {{"type", "linear"}}; }, "'rope_scaling'"},
      {"tiny-llada2", [](json& j) { j["partial_rotary_factor"] = 0.5625; }, "'partial_rotary_factor'"},
  };
  for (const auto& bad : cases) {
    json j = ConfigOf(bad.base);
    bad.edit(j);
    auto parsed = LladaConfig::FromJsonText(j.dump(), "config.json");
    ASSERT_FALSE(parsed.ok()) << bad.expected;
    EXPECT_THAT(parsed.status().message(), HasSubstr(bad.expected));
  }
}

}  // namespace
}  // namespace unmask::checkpoint
