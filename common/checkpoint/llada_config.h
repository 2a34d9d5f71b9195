// config.json of a LLaDA-family checkpoint, and the tensors (names and shapes) such a model must
// hold. Three architectures share one config struct, so that the model, the samplers, the loader
// and the memory model take any of them: dense LLaDA (LLaDA-8B, its own config.json fields), and
// the mixture-of-experts LLaDA-MoE and LLaDA2.x (Hugging Face style fields, moe_config.cc), whose
// fields are mapped onto the dense ones where the meaning is the same.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/checkpoint/checkpoint.h"
#include "common/util/status.h"

namespace unmask::checkpoint {

// Which network config.json describes. LLaDA-MoE publishes model_type "llada" like dense LLaDA,
// so `architectures` tells them apart.
enum class Architecture {
  kLlada,      // LLaDAModelLM: dense, model.transformer.* tensors
  kLladaMoe,   // LLaDAMoEModelLM (inclusionAI LLaDA-MoE): softmax router, q/k/v/o projections
  kLlada2Moe,  // LLaDA2MoeModelLM (LLaDA2.0/2.1): sigmoid group-limited router, fused QKV, block diffusion
  kDream,      // DreamModel (Dream-v0, Dream-Coder, DiffuCoder): Qwen2 blocks, q/k/v biases, shifted prediction
};
const char* ArchitectureName(Architecture a);

// The mixture-of-experts part of LLaDA-MoE and LLaDA2.x configs (all zero for dense LLaDA).
struct MoeConfig {
  std::int64_t num_experts = 0;
  std::int64_t top_k = 0;               // num_experts_per_tok
  std::int64_t expert_hidden_size = 0;  // each expert's SwiGLU width
  // The shared expert's SwiGLU width, 0 = none (LLaDA-MoE: shared_expert_intermediate_size;
  // LLaDA2: moe_intermediate_size x num_shared_experts, one MLP).
  std::int64_t shared_hidden_size = 0;
  // LLaDA2's group-limited routing: experts in n_group contiguous groups, the topk_group best kept.
  std::int64_t n_group = 1;
  std::int64_t topk_group = 1;
  double routed_scaling_factor = 1.0;  // LLaDA2: weights x this after renormalising
  bool expert_bias = false;            // a per-expert bias tensor exists (LLaDA2: always)
  // Per layer: true = MoE block, false = the dense SwiGLU MLP of mlp_hidden_size.
  std::vector<bool> moe_layers;

  bool is_moe_layer(std::int64_t layer) const {
    return layer >= 0 && layer < static_cast<std::int64_t>(moe_layers.size()) && moe_layers[layer];
  }
};

struct LladaConfig {
  std::int64_t d_model = 4096;
  std::int64_t n_heads = 32;
  std::int64_t n_kv_heads = 32;
  std::int64_t n_layers = 32;
  std::int64_t mlp_hidden_size = 12288;
  std::int64_t vocab_size = 126464;
  std::int64_t embedding_size = 126464;  // rows of wte and of the LM head (>= vocab_size)
  double rope_theta = 500000.0;
  double rms_norm_eps = 1e-5;
  std::int64_t max_sequence_length = 4096;
  std::int64_t mask_token_id = 126336;
  std::int64_t eos_token_id = 126081;
  std::int64_t pad_token_id = 126081;
  // End of turn (<|eot_id|>): not in LLaDA-8B's config.json, so LLaDA-8B's id is the default;
  // checkpoints with their own tokenizer name theirs. Checked only where it is used.
  std::int64_t eot_token_id = 126348;
  bool weight_tying = false;
  std::string block_type = "llama";

  Architecture architecture = Architecture::kLlada;
  std::int64_t explicit_head_dim = 0;  // LLaDA2's head_dim field; 0: d_model / n_heads
  // RoPE rotates the first int(head_dim * factor) dims of each head (NeoX rotate_half style).
  double partial_rotary_factor = 1.0;
  bool qk_norm = false;  // RMSNorm over head_dim on q and k before RoPE (weights shared by heads)
  bool qkv_bias = false;  // q/k/v projections carry biases (Dream, as Qwen2)
  // LLaDA2.1 (model_type "llada21_moe", or "llada2_moe" with LLaDA2.1's modeling file beside it:
  // DetectTokenEditing): LLaDA2's architecture, generating with token editing (sampler llada21)
  // by default.
  bool token_editing = false;
  MoeConfig moe;

  std::int64_t head_dim() const { return explicit_head_dim > 0 ? explicit_head_dim : d_model / n_heads; }
  // int() of Python truncates, and a negative factor (LLaDA-MoE's default -1) leaves no rotary dims.
  std::int64_t rotary_dim() const;
  // Width of q (= attention output) and of k / v.
  std::int64_t q_width() const { return n_heads * head_dim(); }
  std::int64_t kv_width() const { return n_kv_heads * head_dim(); }
  bool fused_qkv() const { return architecture == Architecture::kLlada2Moe; }
  // Dream: the logits at position i predict the token at i + 1, so a masked position reads the
  // logits of the position to its left (position 0 its own).
  bool shifted_prediction() const { return architecture == Architecture::kDream; }
  std::int64_t parameter_count() const;

  // Parses and validates; features the engine does not implement are refused by name.
  // The architecture comes from `architectures` (else `model_type`); unknown ones are refused.
  static StatusOr<LladaConfig> FromJsonText(const std::string& text, const std::string& source);
  // FromJsonText, then for LLaDA-MoE / LLaDA2.x the mask and EOS ids that their config.json does
  // not carry, from tokenizer_config.json next to it (mask_token, eos_token).
  static StatusOr<LladaConfig> FromFile(const std::string& path);
  // Writes the fields in config.json form (the other LLaDA fields with their defaults); for the
  // MoE architectures in their own field names, with mask_token_id and eos_token_id added so that
  // the text alone (a segment's manifest) gives back the same config.
  std::string ToJsonText() const;
};

struct ExpectedTensor {
  std::string name;
  std::vector<std::int64_t> shape;
};

// Every tensor a model with this config reads, in layer order (embedding, blocks, final norm,
// head); for the MoE architectures in their Hugging Face names (moe_config.h).
std::vector<ExpectedTensor> ExpectedTensors(const LladaConfig& config);

// Checks that `ckpt` holds every expected tensor with the expected shape and a float dtype;
// errors name the tensor and the shard file.
Status ValidateCheckpoint(const LladaConfig& config, const Checkpoint& ckpt);

}  // namespace unmask::checkpoint
