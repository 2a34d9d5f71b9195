// Parsing LLaDA-MoE and LLaDA2.x config.json files (see moe_config.h). Defaults are the official
// config classes' defaults (configuration_lladamoe.py, configuration_llada2_moe.py) where those
// give a working model; where they do not (LLaDA-MoE's -1 sizes), the field is required.
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/checkpoint/config_fields.h"
#include "common/checkpoint/moe_config.h"

namespace unmask::checkpoint {
namespace {

using config_fields::InRange;
using config_fields::ReadField;
using config_fields::Refuse;
using nlohmann::json;
namespace limits = config_fields;

// A field that must be absent or null: any value is refused by name.
Status RefuseAnyValue(const json& j, const char* key, const std::string& source, const char* why) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return OkStatus();
  return UnimplementedError(source + ": '" + key + "' = " + it->dump() + " is not supported (" + why + ")");
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

StatusOr<Architecture> ArchitectureFromModelType(const std::string& model_type, const std::string& source) {
  if (model_type.empty() || model_type == "llada") return Architecture::kLlada;
  if (model_type == "lladamoe") return Architecture::kLladaMoe;
  if (model_type == "llada2_moe" || model_type == "llada21_moe") return Architecture::kLlada2Moe;
  if (model_type == "Dream") return Architecture::kDream;
  return UnimplementedError(source + ": 'model_type' = " + Quoted(model_type) +
                            " is not supported (llada, lladamoe, llada2_moe, llada21_moe, Dream)");
}

// The fields both MoE architectures name alike (Hugging Face style).
Status ReadSharedFields(const json& j, const std::string& source, LladaConfig& c) {
  UNMASK_RETURN_IF_ERROR(ReadField(j, "hidden_size", c.d_model, source, true));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "num_attention_heads", c.n_heads, source, true));
  c.n_kv_heads = c.n_heads;  // LLaDA-MoE's default (None); LLaDA2's default 0 is no model
  UNMASK_RETURN_IF_ERROR(ReadField(j, "num_key_value_heads", c.n_kv_heads, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "num_hidden_layers", c.n_layers, source, true));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "vocab_size", c.vocab_size, source, true));
  c.embedding_size = c.vocab_size;
  c.rms_norm_eps = 1e-5;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "rms_norm_eps", c.rms_norm_eps, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "tie_word_embeddings", c.weight_tying, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "mask_token_id", c.mask_token_id, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "eos_token_id", c.eos_token_id, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "pad_token_id", c.pad_token_id, source, false));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "hidden_act", std::string("silu"), source, "only SiLU-gated MLPs"));
  UNMASK_RETURN_IF_ERROR(RefuseAnyValue(j, "rope_scaling", source, "plain RoPE only"));
  return OkStatus();
}

Status ReadLladaMoeFields(const json& j, const std::string& source, LladaConfig& c) {
  c.rope_theta = -1;  // the config class's default: no model; required in practice
  UNMASK_RETURN_IF_ERROR(ReadField(j, "rope_theta", c.rope_theta, source, true));
  c.max_sequence_length = 4096;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "max_position_embeddings", c.max_sequence_length, source, false));
  c.partial_rotary_factor = -1;  // the config class's default: no rotary dims at all
  UNMASK_RETURN_IF_ERROR(ReadField(j, "partial_rotary_factor", c.partial_rotary_factor, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "qk_layernorm", c.qk_norm, source, false));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "attention_bias", false, source, "q/k/v/o biases"));
  UNMASK_RETURN_IF_ERROR(RefuseAnyValue(j, "clip_qkv", source, "q/k/v clamping"));

  MoeConfig& m = c.moe;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "num_experts", m.num_experts, source, true));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "num_experts_per_tok", m.top_k, source, true));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "expert_intermediate_size", m.expert_hidden_size, source, true));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "moe_router_enable_expert_bias", m.expert_bias, source, false));
  // The official layer builds a shared expert whenever the field is not null, and its default is
  // -1 (a broken model): absent is refused, null means none.
  if (!j.contains("shared_expert_intermediate_size"))
    return InvalidArgumentError(source + ": missing field 'shared_expert_intermediate_size' (null for none)");
  UNMASK_RETURN_IF_ERROR(ReadField(j, "shared_expert_intermediate_size", m.shared_hidden_size, source, false));

  auto freq = j.find("moe_layer_freq");
  if (freq == j.end() || freq->is_null()) return InvalidArgumentError(source + ": missing field 'moe_layer_freq'");
  if (!freq->is_array()) return InvalidArgumentError(source + ": field 'moe_layer_freq' has the wrong type");
  for (const auto& v : *freq) {
    if (!v.is_number_integer()) return InvalidArgumentError(source + ": field 'moe_layer_freq' has the wrong type");
    m.moe_layers.push_back(v.get<std::int64_t>() != 0);
  }
  if (static_cast<std::int64_t>(m.moe_layers.size()) != c.n_layers) {
    return InvalidArgumentError(source + ": 'moe_layer_freq' has " + std::to_string(m.moe_layers.size()) +
                                " entries, 'num_hidden_layers' is " + std::to_string(c.n_layers));
  }
  for (bool moe : m.moe_layers) {
    if (!moe) return ReadField(j, "dense_intermediate_size", c.mlp_hidden_size, source, true);
  }
  return OkStatus();
}

Status ReadLlada2Fields(const json& j, const std::string& source, LladaConfig& c) {
  c.rope_theta = 10000.0;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "rope_theta", c.rope_theta, source, false));
  c.max_sequence_length = 16384;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "max_position_embeddings", c.max_sequence_length, source, false));
  c.partial_rotary_factor = 0.5;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "partial_rotary_factor", c.partial_rotary_factor, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "head_dim", c.explicit_head_dim, source, false));
  if (j.contains("head_dim") && !j["head_dim"].is_null())
    UNMASK_RETURN_IF_ERROR(InRange("head_dim", c.explicit_head_dim, limits::kMaxDModel, source));
  c.qk_norm = true;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "use_qk_norm", c.qk_norm, source, false));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "use_qkv_bias", false, source, "q/k/v biases"));
  // use_bias defaults to true in the config class: absent means biases, which are not implemented.
  bool use_bias = true;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "use_bias", use_bias, source, false));
  if (use_bias)
    return UnimplementedError(source + ": 'use_bias' = true is not supported (linear biases; absent means true)");
  UNMASK_RETURN_IF_ERROR(Refuse(j, "norm_head", false, source, "a normalised LM head"));

  MoeConfig& m = c.moe;
  m.top_k = 2;
  m.n_group = 8;
  m.topk_group = 4;
  m.routed_scaling_factor = 2.5;
  m.expert_bias = true;  // LLaDA2MoeGate always has one
  std::int64_t shared = 0, first_dense = 0;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "num_experts", m.num_experts, source, true));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "num_experts_per_tok", m.top_k, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "moe_intermediate_size", m.expert_hidden_size, source, true));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "num_shared_experts", shared, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "n_group", m.n_group, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "topk_group", m.topk_group, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "routed_scaling_factor", m.routed_scaling_factor, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "first_k_dense_replace", first_dense, source, false));
  if (shared < 0) return InvalidArgumentError(source + ": 'num_shared_experts' must not be negative");
  if (first_dense < 0) return InvalidArgumentError(source + ": 'first_k_dense_replace' must not be negative");
  UNMASK_RETURN_IF_ERROR(InRange("moe_intermediate_size", m.expert_hidden_size, limits::kMaxMlpHiddenSize, source));
  if (shared > limits::kMaxMlpHiddenSize / m.expert_hidden_size)
    return InvalidArgumentError(source + ": 'num_shared_experts' x 'moe_intermediate_size' is too large");
  m.shared_hidden_size = shared * m.expert_hidden_size;
  UNMASK_RETURN_IF_ERROR(InRange("num_hidden_layers", c.n_layers, limits::kMaxLayers, source));
  for (std::int64_t i = 0; i < c.n_layers; ++i) m.moe_layers.push_back(i >= first_dense);
  if (first_dense > 0) return ReadField(j, "intermediate_size", c.mlp_hidden_size, source, true);
  return OkStatus();
}

// Sizes, heads and RoPE: what the attention and the embedding need.
Status ValidateShape(const LladaConfig& c, const std::string& source) {
  UNMASK_RETURN_IF_ERROR(InRange("hidden_size", c.d_model, limits::kMaxDModel, source));
  UNMASK_RETURN_IF_ERROR(InRange("num_attention_heads", c.n_heads, limits::kMaxDModel, source));
  UNMASK_RETURN_IF_ERROR(InRange("num_key_value_heads", c.n_kv_heads, limits::kMaxDModel, source));
  UNMASK_RETURN_IF_ERROR(InRange("num_hidden_layers", c.n_layers, limits::kMaxLayers, source));
  UNMASK_RETURN_IF_ERROR(InRange("vocab_size", c.vocab_size, limits::kMaxVocab, source));
  UNMASK_RETURN_IF_ERROR(InRange("max_position_embeddings", c.max_sequence_length, limits::kMaxSequence, source));
  if (c.explicit_head_dim == 0 && c.d_model % c.n_heads != 0) {
    return InvalidArgumentError(source + ": 'hidden_size' (" + std::to_string(c.d_model) +
                                ") is not divisible by 'num_attention_heads' (" + std::to_string(c.n_heads) + ")");
  }
  if (c.n_heads % c.n_kv_heads != 0)
    return InvalidArgumentError(source + ": 'num_attention_heads' is not divisible by 'num_key_value_heads'");
  if (c.n_heads > limits::kMaxDModel / c.head_dim())
    return InvalidArgumentError(source + ": 'num_attention_heads' x head dimension is too large");
  if (!(c.partial_rotary_factor <= 1.0))
    return InvalidArgumentError(source + ": 'partial_rotary_factor' must be at most 1");
  if (c.rotary_dim() % 2 != 0)
    return InvalidArgumentError(source + ": 'partial_rotary_factor' gives an odd number of rotary dims");
  if (c.rotary_dim() > 0 && !(c.rope_theta > 0))
    return InvalidArgumentError(source + ": 'rope_theta' must be positive");
  if (!(c.rms_norm_eps > 0)) return InvalidArgumentError(source + ": 'rms_norm_eps' must be positive");
  for (auto [name, id] : {std::pair<const char*, std::int64_t>{"mask_token_id", c.mask_token_id},
                          {"eos_token_id", c.eos_token_id}, {"pad_token_id", c.pad_token_id}}) {
    if (id < -1 || id >= c.embedding_size)
      return InvalidArgumentError(source + ": '" + name + "' = " + std::to_string(id) + " is outside the vocabulary");
  }
  return OkStatus();
}

// Expert counts and the router's groups; `names` are the fields as this architecture spells them.
Status ValidateExperts(const LladaConfig& c, const std::string& source) {
  const MoeConfig& m = c.moe;
  const bool llada2 = c.architecture == Architecture::kLlada2Moe;
  UNMASK_RETURN_IF_ERROR(InRange("num_experts", m.num_experts, limits::kMaxExperts, source));
  UNMASK_RETURN_IF_ERROR(InRange("num_experts_per_tok", m.top_k, limits::kMaxExperts, source));
  if (m.top_k > m.num_experts) {
    return InvalidArgumentError(source + ": 'num_experts_per_tok' (" + std::to_string(m.top_k) +
                                ") exceeds 'num_experts' (" + std::to_string(m.num_experts) + ")");
  }
  std::int64_t moe_layers = 0;
  for (bool moe : m.moe_layers) moe_layers += moe ? 1 : 0;
  if (moe_layers > limits::kMaxExpertInstances / m.num_experts) {
    return InvalidArgumentError(source + ": 'num_experts' x MoE layers exceeds the supported maximum of " +
                                std::to_string(limits::kMaxExpertInstances));
  }
  const char* expert_field = llada2 ? "moe_intermediate_size" : "expert_intermediate_size";
  UNMASK_RETURN_IF_ERROR(InRange(expert_field, m.expert_hidden_size, limits::kMaxMlpHiddenSize, source));
  if (m.shared_hidden_size != 0) {
    UNMASK_RETURN_IF_ERROR(InRange(llada2 ? "num_shared_experts" : "shared_expert_intermediate_size",
                                   m.shared_hidden_size, limits::kMaxMlpHiddenSize, source));
  }
  for (bool moe : m.moe_layers) {
    if (!moe) {
      UNMASK_RETURN_IF_ERROR(InRange(llada2 ? "intermediate_size" : "dense_intermediate_size", c.mlp_hidden_size,
                                     limits::kMaxMlpHiddenSize, source));
      break;
    }
  }
  if (!std::isfinite(m.routed_scaling_factor))
    return InvalidArgumentError(source + ": 'routed_scaling_factor' must be finite");
  if (!llada2) return OkStatus();
  UNMASK_RETURN_IF_ERROR(InRange("n_group", m.n_group, m.num_experts, source));
  if (m.num_experts % m.n_group != 0) {
    return InvalidArgumentError(source + ": 'num_experts' (" + std::to_string(m.num_experts) +
                                ") is not divisible by 'n_group' (" + std::to_string(m.n_group) + ")");
  }
  const std::int64_t per_group = m.num_experts / m.n_group;
  if (m.n_group > 1 && per_group < 2)  // a group's score is the sum of its two best experts
    return InvalidArgumentError(source + ": 'n_group' leaves fewer than 2 experts per group");
  if (m.topk_group <= 0 || m.topk_group > m.n_group) {
    return InvalidArgumentError(source + ": 'topk_group' (" + std::to_string(m.topk_group) +
                                ") must be in [1, 'n_group' (" + std::to_string(m.n_group) + ")]");
  }
  if (m.top_k > m.topk_group * per_group)
    return InvalidArgumentError(source + ": 'num_experts_per_tok' exceeds the experts of 'topk_group' groups");
  return OkStatus();
}

std::int64_t AddedTokenIdOf(const json& tokenizer_config, const std::string& content);

// The id of `token` (a string, or an object with "content") in added_tokens_decoder; -1 if absent.
std::int64_t AddedTokenId(const json& tokenizer_config, const char* key) {
  auto it = tokenizer_config.find(key);
  if (it == tokenizer_config.end()) return -1;
  std::string content;
  if (it->is_string()) {
    content = it->get<std::string>();
  } else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    content = (*it)["content"].get<std::string>();
  } else {
    return -1;
  }
  return AddedTokenIdOf(tokenizer_config, content);
}

// The id of the added token whose text is `content`; -1 if absent.
std::int64_t AddedTokenIdOf(const json& tokenizer_config, const std::string& content) {
  auto added = tokenizer_config.find("added_tokens_decoder");
  if (added == tokenizer_config.end() || !added->is_object()) return -1;
  for (auto entry = added->begin(); entry != added->end(); ++entry) {
    const json& token = entry.value();
    if (!token.is_object() || !token.contains("content") || token["content"] != content) continue;
    try {
      return std::stoll(entry.key());
    } catch (const std::exception&) {
      return -1;
    }
  }
  return -1;
}

}  // namespace

StatusOr<Architecture> ArchitectureOf(const json& j, const std::string& source) {
  std::string model_type;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "model_type", model_type, source, false));
  UNMASK_ASSIGN_OR_RETURN(Architecture by_type, ArchitectureFromModelType(model_type, source));
  auto it = j.find("architectures");
  if (it == j.end() || it->is_null() || (it->is_array() && it->empty())) return by_type;
  if (!it->is_array()) return InvalidArgumentError(source + ": field 'architectures' has the wrong type");
  for (const auto& name : *it) {
    if (!name.is_string()) return InvalidArgumentError(source + ": field 'architectures' has the wrong type");
    Architecture arch;
    if (name == "LLaDAModelLM") arch = Architecture::kLlada;
    else if (name == "LLaDAMoEModelLM") arch = Architecture::kLladaMoe;
    else if (name == "LLaDA2MoeModelLM") arch = Architecture::kLlada2Moe;
    else if (name == "DreamModel") arch = Architecture::kDream;
    else continue;
    // model_type "llada" is published by both LLaDA and LLaDA-MoE; the others name one.
    const bool agrees = model_type.empty() || arch == by_type ||
                        (model_type == "llada" && arch == Architecture::kLladaMoe);
    if (!agrees) {
      return InvalidArgumentError(source + ": 'model_type' = " + Quoted(model_type) + " contradicts 'architectures' (" +
                                  ArchitectureName(arch) + ")");
    }
    return arch;
  }
  return UnimplementedError(source + ": 'architectures' = " + it->dump() +
                            " is not supported (LLaDAModelLM, LLaDAMoEModelLM, LLaDA2MoeModelLM, DreamModel)");
}

StatusOr<LladaConfig> ParseMoeFamilyConfig(const json& j, Architecture arch, const std::string& source) {
  LladaConfig c;
  c.architecture = arch;
  c.mask_token_id = c.eos_token_id = c.pad_token_id = -1;  // from the tokenizer unless config.json says
  c.mlp_hidden_size = 0;  // read only when some layer is dense
  UNMASK_RETURN_IF_ERROR(ReadSharedFields(j, source, c));
  if (arch == Architecture::kDream) {
    UNMASK_RETURN_IF_ERROR(ReadDreamFields(j, source, c));
    UNMASK_RETURN_IF_ERROR(ValidateShape(c, source));
    return c;
  }
  if (arch == Architecture::kLladaMoe) {
    UNMASK_RETURN_IF_ERROR(ReadLladaMoeFields(j, source, c));
  } else {
    UNMASK_RETURN_IF_ERROR(ReadLlada2Fields(j, source, c));
    std::string model_type;  // already read and checked by ArchitectureOf
    UNMASK_RETURN_IF_ERROR(ReadField(j, "model_type", model_type, source, false));
    c.token_editing = model_type == "llada21_moe";
    if (c.token_editing && c.n_kv_heads == 0) c.n_kv_heads = c.n_heads;  // LLaDA2.1's config class: 0 = MHA
  }
  UNMASK_RETURN_IF_ERROR(ValidateShape(c, source));
  UNMASK_RETURN_IF_ERROR(ValidateExperts(c, source));
  return c;
}

void DetectTokenEditing(const std::string& dir, const std::string& config_json, LladaConfig& c) {
  if (c.architecture != Architecture::kLlada2Moe || c.token_editing) return;
  std::string module = "modeling_llada2_moe";
  const json j = json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("auto_map") && j["auto_map"].is_object()) {
    const json& map = j["auto_map"];
    const auto it = map.find("AutoModelForCausalLM");
    if (it != map.end() && it->is_string()) {
      const std::string target = it->get<std::string>();  // "module.Class"
      const std::size_t dot = target.rfind('.');
      const std::string name = target.substr(0, dot == std::string::npos ? target.size() : dot);
      if (!name.empty() && name.find('/') == std::string::npos && name.find("..") == std::string::npos) module = name;
    }
  }
  std::ifstream in(dir + "/" + module + ".py");
  if (!in) return;
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().find("editing_threshold") != std::string::npos) c.token_editing = true;
}

Status FillSpecialTokenIds(const std::string& dir, LladaConfig& c) {
  const bool complete = c.mask_token_id >= 0 && c.eos_token_id >= 0 && c.pad_token_id >= 0;
  if (complete && (c.architecture != Architecture::kDream || c.eot_token_id >= 0)) return OkStatus();
  const std::string path = dir + "/tokenizer_config.json";
  std::ifstream in(path);
  if (in) {
    std::stringstream buf;
    buf << in.rdbuf();
    json j = json::parse(buf.str(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return InvalidArgumentError(path + ": not well-formed JSON");
    if (c.mask_token_id < 0) c.mask_token_id = AddedTokenId(j, "mask_token");
    if (c.eos_token_id < 0) c.eos_token_id = AddedTokenId(j, "eos_token");
    // Dream (Qwen2's chat format) ends a turn with <|im_end|>.
    if (c.architecture == Architecture::kDream && c.eot_token_id < 0) c.eot_token_id = AddedTokenIdOf(j, "<|im_end|>");
  }
  if (c.architecture == Architecture::kDream && c.eot_token_id < 0) c.eot_token_id = c.eos_token_id;
  if (c.pad_token_id < 0) c.pad_token_id = c.eos_token_id;
  for (auto [name, id] : {std::pair<const char*, std::int64_t>{"mask_token", c.mask_token_id},
                          {"eos_token", c.eos_token_id}}) {
    if (id >= c.embedding_size)
      return InvalidArgumentError(path + ": '" + name + "' has id " + std::to_string(id) + ", outside the vocabulary");
  }
  return OkStatus();
}

}  // namespace unmask::checkpoint
