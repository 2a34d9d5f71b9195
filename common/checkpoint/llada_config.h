// config.json of a LLaDA checkpoint, and the tensors (names and shapes) such a model must hold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/checkpoint/checkpoint.h"
#include "common/util/status.h"

namespace unmask::checkpoint {

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

  std::int64_t head_dim() const { return d_model / n_heads; }
  std::int64_t parameter_count() const;

  // Parses and validates; features the engine does not implement are refused by name.
  static StatusOr<LladaConfig> FromJsonText(const std::string& text, const std::string& source);
  static StatusOr<LladaConfig> FromFile(const std::string& path);
  // Writes the fields in config.json form (the other LLaDA fields with their defaults).
  std::string ToJsonText() const;
};

struct ExpectedTensor {
  std::string name;
  std::vector<std::int64_t> shape;
};

// Every tensor a LLaDA model with this config reads, in layer order (wte, blocks, ln_f, ff_out).
std::vector<ExpectedTensor> ExpectedTensors(const LladaConfig& config);

// Checks that `ckpt` holds every expected tensor with the expected shape and a float dtype;
// errors name the tensor and the shard file.
Status ValidateCheckpoint(const LladaConfig& config, const Checkpoint& ckpt);

}  // namespace unmask::checkpoint
