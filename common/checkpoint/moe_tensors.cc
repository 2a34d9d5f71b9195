// The tensors of LLaDA-MoE and LLaDA2.x checkpoints (their official modules' state_dict names),
// their parameter count, and their config.json written back (see moe_config.h).
#include <nlohmann/json.hpp>

#include "common/checkpoint/moe_config.h"

namespace unmask::checkpoint {
namespace {

using nlohmann::json;

// A SwiGLU MLP of `width` under `prefix` (gate_proj, up_proj, down_proj).
void AddSwiGlu(std::vector<ExpectedTensor>& out, const std::string& prefix, std::int64_t d, std::int64_t width) {
  out.push_back({prefix + "gate_proj.weight", {width, d}});
  out.push_back({prefix + "up_proj.weight", {width, d}});
  out.push_back({prefix + "down_proj.weight", {d, width}});
}

// A MoE block: the router, its bias, every expert and the shared expert, in the names of `arch`.
void AddMoeBlock(std::vector<ExpectedTensor>& out, const LladaConfig& c, const std::string& layer) {
  const MoeConfig& m = c.moe;
  const std::int64_t d = c.d_model;
  const bool llada2 = c.architecture == Architecture::kLlada2Moe;
  out.push_back({layer + "mlp.gate.weight", {m.num_experts, d}});
  if (m.expert_bias) out.push_back({layer + (llada2 ? "mlp.gate.expert_bias" : "mlp.expert_bias"), {m.num_experts}});
  for (std::int64_t e = 0; e < m.num_experts; ++e)
    AddSwiGlu(out, layer + "mlp.experts." + std::to_string(e) + ".", d, m.expert_hidden_size);
  if (m.shared_hidden_size > 0)
    AddSwiGlu(out, layer + (llada2 ? "mlp.shared_experts." : "shared_expert."), d, m.shared_hidden_size);
}

void AddAttention(std::vector<ExpectedTensor>& out, const LladaConfig& c, const std::string& layer) {
  const std::int64_t d = c.d_model, hd = c.head_dim();
  if (c.architecture == Architecture::kLlada2Moe) {
    const std::string a = layer + "attention.";
    out.push_back({a + "query_key_value.weight", {c.q_width() + 2 * c.kv_width(), d}});
    if (c.qk_norm) {
      out.push_back({a + "query_layernorm.weight", {hd}});
      out.push_back({a + "key_layernorm.weight", {hd}});
    }
    out.push_back({a + "dense.weight", {d, c.q_width()}});
    return;
  }
  const std::string a = layer + "self_attn.";
  out.push_back({a + "q_proj.weight", {c.q_width(), d}});
  out.push_back({a + "k_proj.weight", {c.kv_width(), d}});
  out.push_back({a + "v_proj.weight", {c.kv_width(), d}});
  out.push_back({a + "o_proj.weight", {d, c.q_width()}});
  if (c.qkv_bias) {
    out.push_back({a + "q_proj.bias", {c.q_width()}});
    out.push_back({a + "k_proj.bias", {c.kv_width()}});
    out.push_back({a + "v_proj.bias", {c.kv_width()}});
  }
  if (c.qk_norm) {
    out.push_back({a + "q_norm.weight", {hd}});
    out.push_back({a + "k_norm.weight", {hd}});
  }
}

json LladaMoeFields(const LladaConfig& c) {
  const MoeConfig& m = c.moe;
  json freq = json::array();
  for (bool moe : m.moe_layers) freq.push_back(moe ? 1 : 0);
  return {{"architectures", {"LLaDAMoEModelLM"}},
          {"model_type", "llada"},
          {"dense_intermediate_size", c.mlp_hidden_size},
          {"expert_intermediate_size", m.expert_hidden_size},
          {"shared_expert_intermediate_size", m.shared_hidden_size > 0 ? json(m.shared_hidden_size) : json(nullptr)},
          {"moe_layer_freq", freq},
          {"moe_router_enable_expert_bias", m.expert_bias},
          {"qk_layernorm", c.qk_norm},
          {"attention_bias", false},
          {"clip_qkv", nullptr}};
}

json Llada2Fields(const LladaConfig& c) {
  const MoeConfig& m = c.moe;
  std::int64_t first_dense = 0;
  while (first_dense < c.n_layers && !m.is_moe_layer(first_dense)) ++first_dense;
  return {{"architectures", {"LLaDA2MoeModelLM"}},
          {"model_type", c.token_editing ? "llada21_moe" : "llada2_moe"},
          {"head_dim", c.head_dim()},
          {"intermediate_size", c.mlp_hidden_size},
          {"moe_intermediate_size", m.expert_hidden_size},
          {"num_shared_experts", m.shared_hidden_size / m.expert_hidden_size},
          {"n_group", m.n_group},
          {"topk_group", m.topk_group},
          {"routed_scaling_factor", m.routed_scaling_factor},
          {"first_k_dense_replace", first_dense},
          {"use_qk_norm", c.qk_norm},
          {"use_qkv_bias", false},
          {"use_bias", false},
          {"norm_head", false}};
}

}  // namespace

std::vector<ExpectedTensor> MoeFamilyExpectedTensors(const LladaConfig& c) {
  const bool llada2 = c.architecture == Architecture::kLlada2Moe;
  const std::int64_t d = c.d_model;
  std::vector<ExpectedTensor> out;
  out.push_back({llada2 ? "model.word_embeddings.weight" : "model.embed_tokens.weight", {c.embedding_size, d}});
  for (std::int64_t i = 0; i < c.n_layers; ++i) {
    const std::string layer = "model.layers." + std::to_string(i) + ".";
    AddAttention(out, c, layer);
    if (c.moe.is_moe_layer(i)) {
      AddMoeBlock(out, c, layer);
    } else {
      AddSwiGlu(out, layer + "mlp.", d, c.mlp_hidden_size);
    }
    out.push_back({layer + "input_layernorm.weight", {d}});
    out.push_back({layer + "post_attention_layernorm.weight", {d}});
  }
  out.push_back({"model.norm.weight", {d}});
  if (!c.weight_tying) out.push_back({"lm_head.weight", {c.embedding_size, d}});
  return out;
}

std::int64_t MoeFamilyParameterCount(const LladaConfig& c) {
  std::int64_t total = 0;
  for (const auto& t : MoeFamilyExpectedTensors(c)) {
    std::int64_t n = 1;
    for (auto dim : t.shape) n *= dim;
    total += n;
  }
  return total;
}

std::string MoeFamilyToJsonText(const LladaConfig& c) {
  json j = c.architecture == Architecture::kLlada2Moe ? Llada2Fields(c)
           : c.architecture == Architecture::kDream  ? DreamFields(c)
                                                     : LladaMoeFields(c);
  j["hidden_size"] = c.d_model;
  j["num_attention_heads"] = c.n_heads;
  j["num_key_value_heads"] = c.n_kv_heads;
  j["num_hidden_layers"] = c.n_layers;
  j["vocab_size"] = c.vocab_size;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = nullptr;
  j["partial_rotary_factor"] = c.partial_rotary_factor;
  j["max_position_embeddings"] = c.max_sequence_length;
  j["tie_word_embeddings"] = c.weight_tying;
  j["hidden_act"] = "silu";
  if (c.architecture != Architecture::kDream) {
    j["num_experts"] = c.moe.num_experts;
    j["num_experts_per_tok"] = c.moe.top_k;
  }
  j["use_cache"] = false;
  // Not in the published files (the tokenizer has them): written so the text alone is complete.
  if (c.mask_token_id >= 0) j["mask_token_id"] = c.mask_token_id;
  if (c.eos_token_id >= 0) j["eos_token_id"] = c.eos_token_id;
  if (c.pad_token_id >= 0) j["pad_token_id"] = c.pad_token_id;
  if (c.architecture == Architecture::kDream && c.eot_token_id >= 0) j["eot_token_id"] = c.eot_token_id;
  return j.dump(2) + "\n";
}

}  // namespace unmask::checkpoint
