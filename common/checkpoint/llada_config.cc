#include "common/checkpoint/llada_config.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/checkpoint/config_fields.h"
#include "common/checkpoint/moe_config.h"

namespace unmask::checkpoint {
namespace {

using nlohmann::json;
using config_fields::InRange;
using config_fields::ReadField;
using config_fields::Refuse;
using config_fields::kMaxDModel;
using config_fields::kMaxLayers;
using config_fields::kMaxMlpHiddenSize;
using config_fields::kMaxSequence;
using config_fields::kMaxVocab;

}  // namespace

const char* ArchitectureName(Architecture a) {
  switch (a) {
    case Architecture::kLlada: return "LLaDAModelLM";
    case Architecture::kLladaMoe: return "LLaDAMoEModelLM";
    case Architecture::kLlada2Moe: return "LLaDA2MoeModelLM";
    case Architecture::kDream: return "DreamModel";
  }
  return "unknown";
}

std::int64_t LladaConfig::rotary_dim() const {
  if (partial_rotary_factor <= 0) return 0;
  return static_cast<std::int64_t>(std::trunc(static_cast<double>(head_dim()) * partial_rotary_factor));
}

std::int64_t LladaConfig::parameter_count() const {
  if (architecture != Architecture::kLlada) return MoeFamilyParameterCount(*this);
  std::int64_t kv = n_kv_heads * head_dim();
  std::int64_t per_layer = 2 * d_model + d_model * d_model * 2 + 2 * d_model * kv + 3 * d_model * mlp_hidden_size;
  std::int64_t total = embedding_size * d_model + n_layers * per_layer + d_model;
  if (!weight_tying) total += embedding_size * d_model;
  return total;
}

StatusOr<LladaConfig> LladaConfig::FromJsonText(const std::string& text, const std::string& source) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError(source + ": not well-formed JSON");
  UNMASK_ASSIGN_OR_RETURN(Architecture arch, ArchitectureOf(j, source));
  if (arch != Architecture::kLlada) return ParseMoeFamilyConfig(j, arch, source);
  LladaConfig c;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "d_model", c.d_model, source, true));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "n_heads", c.n_heads, source, true));
  c.n_kv_heads = c.n_heads;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "n_kv_heads", c.n_kv_heads, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "n_layers", c.n_layers, source, true));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "mlp_hidden_size", c.mlp_hidden_size, source, false));
  if (!j.contains("mlp_hidden_size") || j["mlp_hidden_size"].is_null()) {
    std::int64_t ratio = 4;
    UNMASK_RETURN_IF_ERROR(ReadField(j, "mlp_ratio", ratio, source, false));
    UNMASK_RETURN_IF_ERROR(InRange("d_model", c.d_model, kMaxDModel, source));
    UNMASK_RETURN_IF_ERROR(InRange("mlp_ratio", ratio, kMaxMlpHiddenSize / c.d_model, source));
    c.mlp_hidden_size = ratio * c.d_model;
  }
  UNMASK_RETURN_IF_ERROR(ReadField(j, "vocab_size", c.vocab_size, source, true));
  c.embedding_size = c.vocab_size;
  UNMASK_RETURN_IF_ERROR(ReadField(j, "embedding_size", c.embedding_size, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "rope_theta", c.rope_theta, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "rms_norm_eps", c.rms_norm_eps, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "max_sequence_length", c.max_sequence_length, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "mask_token_id", c.mask_token_id, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "eos_token_id", c.eos_token_id, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "pad_token_id", c.pad_token_id, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "eot_token_id", c.eot_token_id, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "weight_tying", c.weight_tying, source, false));
  UNMASK_RETURN_IF_ERROR(ReadField(j, "block_type", c.block_type, source, false));

  // What the engine computes is the LLaDA "llama" block; everything else is refused by name.
  if (c.block_type != "llama")
    return UnimplementedError(source + ": 'block_type' = \"" + c.block_type + "\" is not supported (only \"llama\")");
  UNMASK_RETURN_IF_ERROR(Refuse(j, "alibi", false, source, "ALiBi position bias; the engine uses RoPE"));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "rope", true, source, "the engine needs RoPE"));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "include_bias", false, source, "linear biases"));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "include_qkv_bias", false, source, "q/k/v biases"));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "bias_for_layer_norm", false, source, "norm biases"));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "attention_layer_norm", false, source, "q/k norms"));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "scale_logits", false, source, "logit scaling"));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "input_emb_norm", false, source, "embedding norm"));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "layer_norm_with_affine", true, source, "norms without weights"));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "layer_norm_type", std::string("rms"), source, "only RMSNorm"));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "activation_type", std::string("silu"), source, "only SiLU-gated MLP"));
  UNMASK_RETURN_IF_ERROR(Refuse(j, "block_group_size", 1, source, "grouped blocks"));

  UNMASK_RETURN_IF_ERROR(InRange("d_model", c.d_model, kMaxDModel, source));
  UNMASK_RETURN_IF_ERROR(InRange("n_heads", c.n_heads, kMaxDModel, source));
  UNMASK_RETURN_IF_ERROR(InRange("n_kv_heads", c.n_kv_heads, kMaxDModel, source));
  UNMASK_RETURN_IF_ERROR(InRange("n_layers", c.n_layers, kMaxLayers, source));
  UNMASK_RETURN_IF_ERROR(InRange("mlp_hidden_size", c.mlp_hidden_size, kMaxMlpHiddenSize, source));
  UNMASK_RETURN_IF_ERROR(InRange("vocab_size", c.vocab_size, kMaxVocab, source));
  UNMASK_RETURN_IF_ERROR(InRange("embedding_size", c.embedding_size, kMaxVocab, source));
  UNMASK_RETURN_IF_ERROR(InRange("max_sequence_length", c.max_sequence_length, kMaxSequence, source));
  if (c.d_model % c.n_heads != 0)
    return InvalidArgumentError(source + ": 'd_model' (" + std::to_string(c.d_model) + ") is not divisible by 'n_heads' (" + std::to_string(c.n_heads) + ")");
  if (c.n_heads % c.n_kv_heads != 0)
    return InvalidArgumentError(source + ": 'n_heads' is not divisible by 'n_kv_heads'");
  if (c.head_dim() % 2 != 0) return InvalidArgumentError(source + ": head dimension must be even for RoPE");
  if (c.embedding_size < c.vocab_size)
    return InvalidArgumentError(source + ": 'embedding_size' is smaller than 'vocab_size'");
  for (auto [name, id] : {std::pair<const char*, std::int64_t>{"mask_token_id", c.mask_token_id},
                          {"eos_token_id", c.eos_token_id}}) {
    if (id < 0 || id >= c.embedding_size)
      return InvalidArgumentError(source + ": '" + name + "' = " + std::to_string(id) + " is outside the vocabulary");
  }
  if (c.rms_norm_eps <= 0) return InvalidArgumentError(source + ": 'rms_norm_eps' must be positive");
  if (c.rope_theta <= 0) return InvalidArgumentError(source + ": 'rope_theta' must be positive");
  return c;
}

StatusOr<LladaConfig> LladaConfig::FromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError(path + ": cannot open");
  std::stringstream buf;
  buf << in.rdbuf();
  UNMASK_ASSIGN_OR_RETURN(LladaConfig c, FromJsonText(buf.str(), path));
  if (c.architecture != Architecture::kLlada) {
    const std::size_t slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
    UNMASK_RETURN_IF_ERROR(FillSpecialTokenIds(dir, c));
    DetectTokenEditing(dir, buf.str(), c);
  }
  return c;
}

std::string LladaConfig::ToJsonText() const {
  if (architecture != Architecture::kLlada) return MoeFamilyToJsonText(*this);
  json j = {
      {"architectures", {"LLaDAModelLM"}}, {"model_type", "llada"}, {"activation_type", "silu"},
      {"alibi", false}, {"attention_layer_norm", false}, {"bias_for_layer_norm", false},
      {"block_group_size", 1}, {"block_type", block_type}, {"d_model", d_model},
      {"embedding_size", embedding_size}, {"eos_token_id", eos_token_id}, {"include_bias", false},
      {"include_qkv_bias", false}, {"input_emb_norm", false}, {"layer_norm_type", "rms"},
      {"layer_norm_with_affine", true}, {"mask_token_id", mask_token_id},
      {"max_sequence_length", max_sequence_length}, {"mlp_hidden_size", mlp_hidden_size},
      {"n_heads", n_heads}, {"n_kv_heads", n_kv_heads}, {"n_layers", n_layers},
      {"pad_token_id", pad_token_id}, {"eot_token_id", eot_token_id}, {"rms_norm_eps", rms_norm_eps}, {"rope", true},
      {"rope_full_precision", true}, {"rope_theta", rope_theta}, {"scale_logits", false},
      {"vocab_size", vocab_size}, {"weight_tying", weight_tying}, {"use_cache", false},
  };
  return j.dump(2) + "\n";
}

std::vector<ExpectedTensor> ExpectedTensors(const LladaConfig& c) {
  if (c.architecture != Architecture::kLlada) return MoeFamilyExpectedTensors(c);
  const std::string p = "model.transformer.";
  const std::int64_t kv = c.n_kv_heads * c.head_dim();
  std::vector<ExpectedTensor> out;
  out.push_back({p + "wte.weight", {c.embedding_size, c.d_model}});
  for (std::int64_t i = 0; i < c.n_layers; ++i) {
    const std::string b = p + "blocks." + std::to_string(i) + ".";
    out.push_back({b + "attn_norm.weight", {c.d_model}});
    out.push_back({b + "q_proj.weight", {c.d_model, c.d_model}});
    out.push_back({b + "k_proj.weight", {kv, c.d_model}});
    out.push_back({b + "v_proj.weight", {kv, c.d_model}});
    out.push_back({b + "attn_out.weight", {c.d_model, c.d_model}});
    out.push_back({b + "ff_norm.weight", {c.d_model}});
    out.push_back({b + "ff_proj.weight", {c.mlp_hidden_size, c.d_model}});
    out.push_back({b + "up_proj.weight", {c.mlp_hidden_size, c.d_model}});
    out.push_back({b + "ff_out.weight", {c.d_model, c.mlp_hidden_size}});
  }
  out.push_back({p + "ln_f.weight", {c.d_model}});
  if (!c.weight_tying) out.push_back({p + "ff_out.weight", {c.embedding_size, c.d_model}});
  return out;
}

namespace {
std::string ShapeString(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}
}  // namespace

Status ValidateCheckpoint(const LladaConfig& config, const Checkpoint& ckpt) {
  for (const auto& expected : ExpectedTensors(config)) {
    UNMASK_ASSIGN_OR_RETURN(TensorRef ref, ckpt.Find(expected.name));
    if (ref.info->shape != expected.shape) {
      return InvalidArgumentError(ref.file->path() + ": tensor '" + expected.name + "' has shape " +
                                  ShapeString(ref.info->shape) + " but config.json implies " +
                                  ShapeString(expected.shape));
    }
    DType d = ref.info->dtype;
    if (d != DType::kBF16 && d != DType::kF16 && d != DType::kF32) {
      return InvalidArgumentError(ref.file->path() + ": tensor '" + expected.name + "' has dtype " +
                                  DTypeName(d) + "; weights must be BF16, F16 or F32");
    }
  }
  return OkStatus();
}

}  // namespace unmask::checkpoint
