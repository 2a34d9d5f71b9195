#include "common/quant/quant_policy.h"

#include <gtest/gtest.h>

namespace unmask::weights {
namespace {

using checkpoint::DType;

TEST(PrecisionSpecTest, ParsesSpecsWithDefaults) {
  auto bf16 = PrecisionSpec::Parse("bf16");
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(bf16->precision, Precision::kBf16);
  EXPECT_FALSE(bf16->quantized());
  EXPECT_EQ(bf16->prune_ratio, 0.0);

  auto int4 = PrecisionSpec::Parse("int4");
  ASSERT_TRUE(int4.ok());
  EXPECT_EQ(int4->group_size, 128);
  EXPECT_FALSE(int4->symmetric);
  EXPECT_FALSE(int4->include_embeddings);
  EXPECT_FALSE(int4->include_lm_head);

  auto full = PrecisionSpec::Parse("INT4:G32:Sym:emb:head:prune=0.25");
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(full->precision, Precision::kInt4);
  EXPECT_EQ(full->group_size, 32);
  EXPECT_TRUE(full->symmetric);
  EXPECT_TRUE(full->include_embeddings);
  EXPECT_TRUE(full->include_lm_head);
  EXPECT_EQ(full->prune_ratio, 0.25);

  EXPECT_EQ(PrecisionSpec::Parse("int4:g64:asym")->group_size, 64);
  EXPECT_EQ(PrecisionSpec::Parse("half")->precision, Precision::kFp16);
  EXPECT_EQ(PrecisionSpec::Parse("float32")->precision, Precision::kFp32);
  EXPECT_EQ(PrecisionSpec::Parse("int8:head")->include_lm_head, true);
}

TEST(PrecisionSpecTest, ToStringRoundTrips) {
  for (const char* text : {"fp32", "bf16", "fp16", "int8", "int8:emb:head", "int4:g32:sym", "int4:g128:asym:head",
                           "bf16:prune=0.5", "int4:g64:asym:prune=0.3", "int8:prune=0.123456789"}) {
    auto spec = PrecisionSpec::Parse(text);
    ASSERT_TRUE(spec.ok()) << text << ": " << spec.status().ToString();
    EXPECT_EQ(spec->ToString(), text);
    auto again = PrecisionSpec::Parse(spec->ToString());
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(*again == *spec) << text;
  }
  EXPECT_EQ(PrecisionSpec::Parse("int4")->ToString(), "int4:g128:asym");
  EXPECT_TRUE(*PrecisionSpec::Parse("int4") != *PrecisionSpec::Parse("int4:g64"));
}

TEST(PrecisionSpecTest, BadSpecsNameTheOffendingPart) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "part 1 '': unknown precision"},
      {"int3", "part 1 'int3': unknown precision"},
      {"int4:g48", "part 2 'g48': group size must be g32, g64 or g128"},
      {"int4:g64x", "part 2 'g64x'"},
      {"int8:asym", "part 2 'asym': int8 is always symmetric"},
      {"bf16:g64", "part 2 'g64': a group size applies only to int4"},
      {"int4:g64:g32", "part 3 'g32': group size given twice"},
      {"int4:sym:asym", "part 3 'asym': sym/asym given twice"},
      {"int4::sym", "part 2 '': empty option"},
      {"int4:sym:", "part 3 '': empty option"},
      {"bf16:prune=1.5", "part 2 'prune=1.5': prune ratio must be in [0, 1)"},
      {"bf16:prune=1", "prune ratio must be in [0, 1)"},
      {"bf16:prune=abc", "part 2 'prune=abc': prune ratio is not a number"},
      {"bf16:prune=", "prune ratio is not a number"},
      {"bf16:emb", "part 2 'emb': applies only to int8 and int4"},
      {"int4:foo", "part 2 'foo': unknown option"},
  };
  for (const auto& [text, expected] : cases) {
    auto spec = PrecisionSpec::Parse(text);
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(spec.status().message().find(expected), std::string::npos)
        << "spec '" << text << "' gave: " << spec.status().message();
    EXPECT_NE(spec.status().message().find("precision spec '" + std::string(text) + "'"), std::string::npos);
  }
}

TEST(QuantPolicyTest, ClassifiesLladaTensorNames) {
  EXPECT_EQ(ClassifyTensor("model.transformer.wte.weight"), TensorRole::kEmbedding);
  EXPECT_EQ(ClassifyTensor("model.transformer.ff_out.weight"), TensorRole::kLmHead);
  EXPECT_EQ(ClassifyTensor("model.transformer.ln_f.weight"), TensorRole::kNorm);
  EXPECT_EQ(ClassifyTensor("model.transformer.blocks.12.attn_norm.weight"), TensorRole::kNorm);
  EXPECT_EQ(ClassifyTensor("model.transformer.blocks.0.ff_norm.weight"), TensorRole::kNorm);
  for (const char* leaf : {"q_proj", "k_proj", "v_proj", "attn_out"})
    EXPECT_EQ(ClassifyTensor(std::string("model.transformer.blocks.3.") + leaf + ".weight"), TensorRole::kAttention);
  for (const char* leaf : {"ff_proj", "up_proj", "ff_out"})
    EXPECT_EQ(ClassifyTensor(std::string("model.transformer.blocks.31.") + leaf + ".weight"), TensorRole::kMlp);
  EXPECT_EQ(ClassifyTensor("model.transformer.blocks.0.q_proj.bias"), TensorRole::kOther);
  EXPECT_EQ(ClassifyTensor("transformer.lm_head.weight"), TensorRole::kOther);
}

// LLaDA-MoE and LLaDA2.x (Hugging Face names): every expert is an MLP layer, quantized per expert;
// the router, its expert bias (kept float32) and LLaDA2's fused QKV (split into views at load)
// stay unquantized.
TEST(QuantPolicyTest, ClassifiesMoeFamilyTensorNames) {
  EXPECT_EQ(ClassifyTensor("model.embed_tokens.weight"), TensorRole::kEmbedding);
  EXPECT_EQ(ClassifyTensor("model.word_embeddings.weight"), TensorRole::kEmbedding);
  EXPECT_EQ(ClassifyTensor("lm_head.weight"), TensorRole::kLmHead);
  EXPECT_EQ(ClassifyTensor("model.norm.weight"), TensorRole::kNorm);
  for (const char* name : {"model.layers.0.input_layernorm.weight", "model.layers.1.self_attn.q_norm.weight",
                           "model.layers.1.attention.key_layernorm.weight"})
    EXPECT_EQ(ClassifyTensor(name), TensorRole::kNorm) << name;
  for (const char* name : {"model.layers.0.self_attn.o_proj.weight", "model.layers.0.attention.dense.weight"})
    EXPECT_EQ(ClassifyTensor(name), TensorRole::kAttention) << name;
  for (const char* name : {"model.layers.3.mlp.experts.63.down_proj.weight", "model.layers.3.shared_expert.up_proj.weight",
                           "model.layers.3.mlp.shared_experts.gate_proj.weight", "model.layers.0.mlp.gate_proj.weight"})
    EXPECT_EQ(ClassifyTensor(name), TensorRole::kMlp) << name;
  for (const char* name : {"model.layers.3.mlp.gate.weight", "model.layers.3.mlp.gate.expert_bias",
                           "model.layers.0.attention.query_key_value.weight"})
    EXPECT_EQ(ClassifyTensor(name), TensorRole::kOther) << name;
  const auto int4 = *PrecisionSpec::Parse("int4");
  EXPECT_EQ(StorageFor(int4, "model.layers.3.mlp.experts.0.up_proj.weight", {32, 64}).scheme,
            QuantScheme::kInt4Groupwise);
  for (const char* spec : {"bf16", "fp16", "int8"})
    EXPECT_EQ(StorageFor(*PrecisionSpec::Parse(spec), "model.layers.3.mlp.expert_bias", {16}).dtype, DType::kF32) << spec;
}

TEST(QuantPolicyTest, QuantizesBlockLinearsOnlyByDefault) {
  const std::vector<std::int64_t> mat = {128, 64}, vec = {64};
  const auto int4 = *PrecisionSpec::Parse("int4:g64:sym:prune=0.5");
  TensorStorage q = StorageFor(int4, "model.transformer.blocks.0.q_proj.weight", mat);
  EXPECT_EQ(q.scheme, QuantScheme::kInt4Groupwise);
  EXPECT_EQ(q.dtype, DType::kU8);
  EXPECT_EQ(q.group_size, 64);
  EXPECT_TRUE(q.symmetric);
  EXPECT_TRUE(q.prune);
  for (const char* name : {"model.transformer.wte.weight", "model.transformer.ff_out.weight"}) {
    TensorStorage s = StorageFor(int4, name, mat);
    EXPECT_EQ(s.scheme, QuantScheme::kNone) << name;
    EXPECT_EQ(s.dtype, DType::kBF16) << name;
    EXPECT_FALSE(s.prune) << name;
  }
  TensorStorage norm = StorageFor(int4, "model.transformer.blocks.0.attn_norm.weight", vec);
  EXPECT_EQ(norm.scheme, QuantScheme::kNone);
  EXPECT_EQ(norm.dtype, DType::kBF16);

  const auto int8 = *PrecisionSpec::Parse("int8:emb:head");
  EXPECT_EQ(StorageFor(int8, "model.transformer.wte.weight", mat).scheme, QuantScheme::kInt8PerChannel);
  EXPECT_EQ(StorageFor(int8, "model.transformer.ff_out.weight", mat).scheme, QuantScheme::kInt8PerChannel);
  EXPECT_EQ(StorageFor(int8, "model.transformer.blocks.1.ff_out.weight", mat).dtype, DType::kI8);
  EXPECT_EQ(StorageFor(int8, "model.transformer.ln_f.weight", vec).scheme, QuantScheme::kNone);

  const auto fp32 = *PrecisionSpec::Parse("fp32");
  EXPECT_EQ(StorageFor(fp32, "model.transformer.blocks.0.q_proj.weight", mat).dtype, DType::kF32);
  EXPECT_EQ(StorageFor(fp32, "model.transformer.ln_f.weight", vec).dtype, DType::kF32);
  EXPECT_EQ(StorageFor(*PrecisionSpec::Parse("fp16"), "model.transformer.wte.weight", mat).dtype, DType::kF16);
}

TEST(QuantPolicyTest, SchemeNamesRoundTrip) {
  for (QuantScheme s : {QuantScheme::kNone, QuantScheme::kInt8PerChannel, QuantScheme::kInt4Groupwise})
    EXPECT_EQ(*ParseQuantScheme(QuantSchemeName(s)), s);
  EXPECT_FALSE(ParseQuantScheme("int3").ok());
}

}  // namespace
}  // namespace unmask::weights
