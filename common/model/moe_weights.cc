// LLaDA-MoE, LLaDA2.x and Dream weights from their official tensor names (see weight_readers.h; the names
// and shapes are checkpoint::MoeFamilyExpectedTensors).
#include <ATen/ATen.h>

#include "common/model/weight_readers.h"

namespace unmask::model {
namespace {

using checkpoint::Architecture;
using checkpoint::LladaConfig;

StatusOr<SwiGluWeights> ReadSwiGlu(const WeightReaders& read, const std::string& prefix) {
  SwiGluWeights w;
  UNMASK_ASSIGN_OR_RETURN(w.gate_proj, read.linear(prefix + "gate_proj.weight"));
  UNMASK_ASSIGN_OR_RETURN(w.up_proj, read.linear(prefix + "up_proj.weight"));
  UNMASK_ASSIGN_OR_RETURN(w.down_proj, read.linear(prefix + "down_proj.weight"));
  return w;
}

// LLaDA2's query_key_value: (heads + 2 kv_heads) x head_dim rows, Q then K then V, split by rows
// into three views of the one tensor.
Status ReadFusedAttention(const LladaConfig& c, const WeightReaders& read, const std::string& a,
                          LladaBlockWeights& blk) {
  UNMASK_ASSIGN_OR_RETURN(at::Tensor qkv, read.dense(a + "query_key_value.weight", /*keep_stored=*/true));
  blk.q_proj = Linear(qkv.narrow(0, 0, c.q_width()));
  blk.k_proj = Linear(qkv.narrow(0, c.q_width(), c.kv_width()));
  blk.v_proj = Linear(qkv.narrow(0, c.q_width() + c.kv_width(), c.kv_width()));
  UNMASK_ASSIGN_OR_RETURN(blk.attn_out, read.linear(a + "dense.weight"));
  if (c.qk_norm) {
    UNMASK_ASSIGN_OR_RETURN(blk.q_norm, read.dense(a + "query_layernorm.weight", false));
    UNMASK_ASSIGN_OR_RETURN(blk.k_norm, read.dense(a + "key_layernorm.weight", false));
  }
  return OkStatus();
}

Status ReadSeparateAttention(const LladaConfig& c, const WeightReaders& read, const std::string& a,
                             LladaBlockWeights& blk) {
  UNMASK_ASSIGN_OR_RETURN(blk.q_proj, read.linear(a + "q_proj.weight"));
  UNMASK_ASSIGN_OR_RETURN(blk.k_proj, read.linear(a + "k_proj.weight"));
  UNMASK_ASSIGN_OR_RETURN(blk.v_proj, read.linear(a + "v_proj.weight"));
  UNMASK_ASSIGN_OR_RETURN(blk.attn_out, read.linear(a + "o_proj.weight"));
  if (c.qkv_bias) {
    UNMASK_ASSIGN_OR_RETURN(blk.q_bias, read.dense(a + "q_proj.bias", false));
    UNMASK_ASSIGN_OR_RETURN(blk.k_bias, read.dense(a + "k_proj.bias", false));
    UNMASK_ASSIGN_OR_RETURN(blk.v_bias, read.dense(a + "v_proj.bias", false));
  }
  if (c.qk_norm) {
    UNMASK_ASSIGN_OR_RETURN(blk.q_norm, read.dense(a + "q_norm.weight", false));
    UNMASK_ASSIGN_OR_RETURN(blk.k_norm, read.dense(a + "k_norm.weight", false));
  }
  return OkStatus();
}

StatusOr<MoeWeights> ReadMoeBlock(const LladaConfig& c, const WeightReaders& read, const std::string& layer) {
  const bool llada2 = c.architecture == Architecture::kLlada2Moe;
  MoeWeights m;
  if (llada2) {
    UNMASK_ASSIGN_OR_RETURN(m.router_fp32, read.float32(layer + "mlp.gate.weight"));
  } else {
    UNMASK_ASSIGN_OR_RETURN(m.router, read.linear(layer + "mlp.gate.weight"));
  }
  if (c.moe.expert_bias) {
    UNMASK_ASSIGN_OR_RETURN(m.expert_bias,
                            read.float32(layer + (llada2 ? "mlp.gate.expert_bias" : "mlp.expert_bias")));
  }
  m.experts.reserve(static_cast<std::size_t>(c.moe.num_experts));
  for (std::int64_t e = 0; e < c.moe.num_experts; ++e) {
    UNMASK_ASSIGN_OR_RETURN(SwiGluWeights expert, ReadSwiGlu(read, layer + "mlp.experts." + std::to_string(e) + "."));
    m.experts.push_back(std::move(expert));
  }
  if (c.moe.shared_hidden_size > 0) {
    UNMASK_ASSIGN_OR_RETURN(m.shared, ReadSwiGlu(read, layer + (llada2 ? "mlp.shared_experts." : "shared_expert.")));
    m.has_shared = true;
  }
  return m;
}

StatusOr<LladaBlockWeights> ReadLayer(const LladaConfig& c, const WeightReaders& read, std::int64_t i) {
  const std::string layer = "model.layers." + std::to_string(i) + ".";
  LladaBlockWeights blk;
  UNMASK_ASSIGN_OR_RETURN(blk.attn_norm, read.dense(layer + "input_layernorm.weight", false));
  UNMASK_ASSIGN_OR_RETURN(blk.ff_norm, read.dense(layer + "post_attention_layernorm.weight", false));
  if (c.fused_qkv()) {
    UNMASK_RETURN_IF_ERROR(ReadFusedAttention(c, read, layer + "attention.", blk));
  } else {
    UNMASK_RETURN_IF_ERROR(ReadSeparateAttention(c, read, layer + "self_attn.", blk));
  }
  if (c.moe.is_moe_layer(i)) {
    UNMASK_ASSIGN_OR_RETURN(blk.moe, ReadMoeBlock(c, read, layer));
  } else {
    UNMASK_ASSIGN_OR_RETURN(SwiGluWeights mlp, ReadSwiGlu(read, layer + "mlp."));
    blk.ff_proj = std::move(mlp.gate_proj);
    blk.up_proj = std::move(mlp.up_proj);
    blk.ff_out = std::move(mlp.down_proj);
  }
  return blk;
}

}  // namespace

StatusOr<LladaWeights> AssembleMoeFamily(const LladaConfig& c, const WeightReaders& read) {
  LladaWeights w;
  const bool llada2 = c.architecture == Architecture::kLlada2Moe;
  UNMASK_ASSIGN_OR_RETURN(w.wte, read.linear(llada2 ? "model.word_embeddings.weight" : "model.embed_tokens.weight"));
  for (std::int64_t i = 0; i < c.n_layers; ++i) {
    UNMASK_ASSIGN_OR_RETURN(LladaBlockWeights blk, ReadLayer(c, read, i));
    w.blocks.push_back(std::move(blk));
  }
  UNMASK_ASSIGN_OR_RETURN(w.ln_f, read.dense("model.norm.weight", false));
  if (c.weight_tying) {
    w.lm_head = w.wte;
  } else {
    UNMASK_ASSIGN_OR_RETURN(w.lm_head, read.linear("lm_head.weight"));
  }
  return w;
}

}  // namespace unmask::model
