#include "common/quant/quant_policy.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "common/quant/int4_groupwise.h"
#include "common/util/strings.h"

namespace unmask::weights {

using checkpoint::DType;

const char* PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kInt8:
      return "int8";
    case Precision::kInt4:
      return "int4";
  }
  return "?";
}

StatusOr<Precision> ParsePrecisionName(const std::string& name) {
  std::string p = name;
  std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return std::tolower(c); });
  if (p == "fp32" || p == "f32" || p == "float32") return Precision::kFp32;
  if (p == "bf16" || p == "bfloat16") return Precision::kBf16;
  if (p == "fp16" || p == "f16" || p == "float16" || p == "half") return Precision::kFp16;
  if (p == "int8") return Precision::kInt8;
  if (p == "int4") return Precision::kInt4;
  return InvalidArgumentError("unknown precision '" + name + "' (expected fp32, bf16, fp16, int8 or int4)");
}

const char* QuantSchemeName(QuantScheme scheme) {
  switch (scheme) {
    case QuantScheme::kNone:
      return "none";
    case QuantScheme::kInt8PerChannel:
      return "int8_per_channel";
    case QuantScheme::kInt4Groupwise:
      return "int4_groupwise";
  }
  return "?";
}

StatusOr<QuantScheme> ParseQuantScheme(const std::string& name) {
  for (QuantScheme s : {QuantScheme::kNone, QuantScheme::kInt8PerChannel, QuantScheme::kInt4Groupwise}) {
    if (name == QuantSchemeName(s)) return s;
  }
  return InvalidArgumentError("unknown quantization scheme '" + name +
                              "' (expected none, int8_per_channel or int4_groupwise)");
}

namespace {

std::string FormatRatio(double r) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.15g", r);
  if (std::strtod(buf, nullptr) != r) std::snprintf(buf, sizeof(buf), "%.17g", r);
  return buf;
}

std::vector<std::string> SplitColons(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (true) {
    std::size_t end = text.find(':', begin);
    parts.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

}  // namespace

StatusOr<PrecisionSpec> PrecisionSpec::Parse(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::vector<std::string> parts = SplitColons(lower);
  auto fail = [&](std::size_t i, const std::string& why) {
    return InvalidArgumentError("precision spec '" + text + "': part " + std::to_string(i + 1) + " '" + parts[i] +
                                "': " + why);
  };
  PrecisionSpec spec;
  auto precision = ParsePrecisionName(parts[0]);
  if (!precision.ok()) return fail(0, "unknown precision (expected fp32, bf16, fp16, int8 or int4)");
  spec.precision = *precision;
  bool seen_group = false, seen_sym = false, seen_prune = false;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& o = parts[i];
    if (o.empty()) return fail(i, "empty option");
    if (o[0] == 'g' && o.size() > 1 && std::isdigit(static_cast<unsigned char>(o[1]))) {
      if (spec.precision != Precision::kInt4) return fail(i, "a group size applies only to int4");
      if (seen_group) return fail(i, "group size given twice");
      char* end = nullptr;
      long g = std::strtol(o.c_str() + 1, &end, 10);
      if (*end != '\0' || !IsValidInt4GroupSize(static_cast<int>(g)))
        return fail(i, "group size must be g32, g64 or g128");
      spec.group_size = static_cast<int>(g);
      seen_group = true;
    } else if (o == "sym" || o == "asym") {
      if (spec.precision != Precision::kInt4)
        return fail(i, spec.precision == Precision::kInt8 ? "int8 is always symmetric" : "applies only to int4");
      if (seen_sym) return fail(i, "sym/asym given twice");
      spec.symmetric = o == "sym";
      seen_sym = true;
    } else if (o.rfind("prune=", 0) == 0) {
      if (seen_prune) return fail(i, "prune given twice");
      const std::string value = o.substr(6);
      char* end = nullptr;
      double r = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0') return fail(i, "prune ratio is not a number");
      if (!(r >= 0.0 && r < 1.0)) return fail(i, "prune ratio must be in [0, 1)");
      spec.prune_ratio = r;
      seen_prune = true;
    } else if (o == "emb" || o == "head") {
      if (!spec.quantized()) return fail(i, "applies only to int8 and int4");
      (o == "emb" ? spec.include_embeddings : spec.include_lm_head) = true;
    } else {
      return fail(i, "unknown option (expected g32|g64|g128, sym|asym, prune=<ratio>, emb, head)");
    }
  }
  return spec;
}

std::string PrecisionSpec::ToString() const {
  std::string s = PrecisionName(precision);
  if (precision == Precision::kInt4) s += ":g" + std::to_string(group_size) + (symmetric ? ":sym" : ":asym");
  if (include_embeddings) s += ":emb";
  if (include_lm_head) s += ":head";
  if (prune_ratio > 0) s += ":prune=" + FormatRatio(prune_ratio);
  return s;
}

bool PrecisionSpec::operator==(const PrecisionSpec& o) const {
  if (precision != o.precision || prune_ratio != o.prune_ratio) return false;
  if (quantized() && (include_embeddings != o.include_embeddings || include_lm_head != o.include_lm_head)) return false;
  if (precision == Precision::kInt4 && (group_size != o.group_size || symmetric != o.symmetric)) return false;
  return true;
}

const char* TensorRoleName(TensorRole role) {
  switch (role) {
    case TensorRole::kEmbedding:
      return "embedding";
    case TensorRole::kAttention:
      return "attention";
    case TensorRole::kMlp:
      return "mlp";
    case TensorRole::kNorm:
      return "norm";
    case TensorRole::kLmHead:
      return "lm_head";
    case TensorRole::kOther:
      return "other";
  }
  return "?";
}

namespace {

// LLaDA-MoE and LLaDA2.x names (model.layers.N.*). Every expert's and shared expert's projections
// are MLP layers (quantized per expert). LLaDA2's fused query_key_value stays "other" (16-bit):
// the model splits it into q/k/v views at load, which packed bytes cannot give. The router and
// its expert bias stay "other" too: they choose the experts.
TensorRole ClassifyMoeFamilyTensor(const std::string& name) {
  if (name == "model.embed_tokens.weight" || name == "model.word_embeddings.weight") return TensorRole::kEmbedding;
  if (name == "lm_head.weight") return TensorRole::kLmHead;
  if (name == "model.norm.weight" || EndsWith(name, "layernorm.weight") || EndsWith(name, "_norm.weight"))
    return TensorRole::kNorm;
  for (const char* leaf : {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                           "self_attn.o_proj.weight", "attention.dense.weight"}) {
    if (EndsWith(name, leaf)) return TensorRole::kAttention;
  }
  for (const char* leaf : {"gate_proj.weight", "up_proj.weight", "down_proj.weight"}) {
    if (EndsWith(name, leaf)) return TensorRole::kMlp;
  }
  return TensorRole::kOther;
}

}  // namespace

TensorRole ClassifyTensor(const std::string& name) {
  if (name.rfind("model.layers.", 0) == 0 || name.rfind("model.embed_tokens.", 0) == 0 ||
      name.rfind("model.word_embeddings.", 0) == 0 || name == "model.norm.weight" || name == "lm_head.weight")
    return ClassifyMoeFamilyTensor(name);
  const std::string prefix = "model.transformer.";
  if (name == prefix + "wte.weight") return TensorRole::kEmbedding;
  if (name == prefix + "ff_out.weight") return TensorRole::kLmHead;
  if (name == prefix + "ln_f.weight") return TensorRole::kNorm;
  if (name.rfind(prefix + "blocks.", 0) != 0) return TensorRole::kOther;
  const std::size_t dot = name.find('.', prefix.size() + 7);
  if (dot == std::string::npos) return TensorRole::kOther;
  const std::string leaf = name.substr(dot + 1);
  if (leaf == "q_proj.weight" || leaf == "k_proj.weight" || leaf == "v_proj.weight" || leaf == "attn_out.weight")
    return TensorRole::kAttention;
  if (leaf == "ff_proj.weight" || leaf == "up_proj.weight" || leaf == "ff_out.weight") return TensorRole::kMlp;
  if (leaf == "attn_norm.weight" || leaf == "ff_norm.weight") return TensorRole::kNorm;
  return TensorRole::kOther;
}

TensorStorage StorageFor(const PrecisionSpec& spec, const std::string& name, const std::vector<std::int64_t>& shape) {
  const TensorRole role = ClassifyTensor(name);
  const bool linear = role == TensorRole::kAttention || role == TensorRole::kMlp;
  TensorStorage st;
  st.prune = linear && spec.prune_ratio > 0;
  // A MoE router's expert bias (num_experts floats per layer) decides which experts run: kept in
  // float32, as published, at every precision.
  if (EndsWith(name, "expert_bias")) {
    st.dtype = DType::kF32;
    return st;
  }
  switch (spec.precision) {
    case Precision::kFp32:
      st.dtype = DType::kF32;
      return st;
    case Precision::kBf16:
      st.dtype = DType::kBF16;
      return st;
    case Precision::kFp16:
      st.dtype = DType::kF16;
      return st;
    case Precision::kInt8:
    case Precision::kInt4:
      break;
  }
  const bool quantize = shape.size() == 2 && (linear || (role == TensorRole::kEmbedding && spec.include_embeddings) ||
                                              (role == TensorRole::kLmHead && spec.include_lm_head));
  if (!quantize) {
    st.dtype = DType::kBF16;
    return st;
  }
  if (spec.precision == Precision::kInt8) {
    st.scheme = QuantScheme::kInt8PerChannel;
    st.dtype = DType::kI8;
  } else {
    st.scheme = QuantScheme::kInt4Groupwise;
    st.dtype = DType::kU8;
    st.group_size = spec.group_size;
    st.symmetric = spec.symmetric;
  }
  return st;
}

std::int64_t DequantChunkRows(std::int64_t rows, std::int64_t cols) {
  if (cols <= 0 || rows <= kMaxDequantScratchElements / cols) return rows;
  return std::max<std::int64_t>(1, kMaxDequantScratchElements / cols);
}

}  // namespace unmask::weights
