// Dream's config.json (Dream-v0-Instruct-7B and the models built the same way): Qwen2 fields read
// onto LladaConfig, as the official DreamConfig (configuration_dream.py) gives them, with its
// defaults; features the engine does not compute (sliding-window attention) are refused by name.
// The fields Dream shares with the MoE architectures (sizes, heads, norms, ids, tying) are read
// by moe_config.cc before this.
#include <nlohmann/json.hpp>

#include "common/checkpoint/config_fields.h"
#include "common/checkpoint/moe_config.h"

namespace unmask::checkpoint {

using config_fields::ReadField;
using config_fields::Refuse;
using nlohmann::json;

Status ReadDreamFields(const json& j, const std::string& source, LladaConfig& c) {
  const auto absent = [&](const char* key) { return !j.contains(key) || j[key].is_null(); };
  if (absent("rms_norm_eps")) c.rms_norm_eps = 1e-6;  // DreamConfig's default (the shared reader's is 1e-5)
  c.rope_theta = 10000.0;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "rope_theta", c.rope_theta, source, false));
  c.max_sequence_length = 32768;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "max_position_embeddings", c.max_sequence_length, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "intermediate_size", c.mlp_hidden_size, source, true));
  UNMASK_RETURN_IF_ERROR(config_fields::InRange("intermediate_size", c.mlp_hidden_size,
                                                config_fields::kMaxMlpHiddenSize, source));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "use_sliding_window", false, source, "sliding-window attention"));
  // Not a DreamConfig field: the end-of-turn id comes from the tokenizer (<|im_end|>, see
  // FillSpecialTokenIds); written back by ToJsonText so that a manifest alone is complete.
  c.eot_token_id = -1;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "eot_token_id", c.eot_token_id, source, false));
  c.partial_rotary_factor = 1.0;
  c.qkv_bias = true;  // DreamAttention: q/k/v projections with bias, o_proj without
  c.qk_norm = false;
  return OkStatus();
}

json DreamFields(const LladaConfig& c) {
  return {{"architectures", {"DreamModel"}},
          {"model_type", "Dream"},
          {"intermediate_size", c.mlp_hidden_size},
          {"use_sliding_window", false}};
}

}  // namespace unmask::checkpoint
