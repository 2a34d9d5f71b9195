#include "common/model/llada_model.h"

#include <ATen/ATen.h>

#include "common/model/layers.h"
#include "common/model/torch_util.h"

namespace unmask::model {

StatusOr<std::unique_ptr<LladaModel>> LladaModel::Load(const std::string& dir, const ModelOptions& options) {
  UNMASK_ASSIGN_OR_RETURN(auto config, checkpoint::LladaConfig::FromFile(dir + "/config.json"));
  UNMASK_ASSIGN_OR_RETURN(auto ckpt, checkpoint::Checkpoint::Open(dir));
  UNMASK_ASSIGN_OR_RETURN(c10::Device device, ParseDevice(options.device));
  std::shared_ptr<const checkpoint::Checkpoint> shared(std::move(ckpt));
  UNMASK_ASSIGN_OR_RETURN(auto weights, LoadLladaWeights(config, shared, options));
  return std::make_unique<LladaModel>(std::move(config), std::move(weights), options, device);
}

LladaModel::LladaModel(checkpoint::LladaConfig config, LladaWeights weights, ModelOptions options,
                       c10::Device device)
    : config_(std::move(config)), weights_(std::move(weights)), options_(std::move(options)), device_(device) {}

at::ScalarType LladaModel::compute_dtype() const { return ToScalarType(options_.precision); }

at::Tensor LladaModel::Block(const LladaBlockWeights& blk, const at::Tensor& x, const RotaryTables& rope,
                             const at::Tensor& key_bias) const {
  const auto b = x.size(0), t = x.size(1);
  const auto hd = config_.head_dim();
  at::Tensor h = RmsNorm(x, blk.attn_norm, config_.rms_norm_eps);
  at::Tensor q = blk.q_proj.Apply(h).view({b, t, config_.n_heads, hd}).transpose(1, 2);
  at::Tensor k = blk.k_proj.Apply(h).view({b, t, config_.n_kv_heads, hd}).transpose(1, 2);
  at::Tensor v = blk.v_proj.Apply(h).view({b, t, config_.n_kv_heads, hd}).transpose(1, 2);
  q = ApplyRotary(q, rope);
  k = ApplyRotary(k, rope);
  at::Tensor att = Attention(q, k, v, key_bias, options_.attention_query_chunk);
  att = att.transpose(1, 2).contiguous().view({b, t, config_.d_model});
  at::Tensor out = x + blk.attn_out.Apply(att);

  h = RmsNorm(out, blk.ff_norm, config_.rms_norm_eps);
  at::Tensor gate = at::silu(blk.ff_proj.Apply(h));
  return out + blk.ff_out.Apply(gate * blk.up_proj.Apply(h));
}

at::Tensor LladaModel::Hidden(const at::Tensor& input_ids, const at::Tensor& attention_mask) const {
  at::Tensor x = at::embedding(weights_.wte, input_ids);
  const RotaryTables rope = MakeRotaryTables(input_ids.size(1), config_.head_dim(), config_.rope_theta, device_);
  const at::Tensor key_bias = KeyPaddingBias(attention_mask);
  for (const auto& blk : weights_.blocks) x = Block(blk, x, rope, key_bias);
  return x;
}

at::Tensor LladaModel::HeadLogits(const at::Tensor& hidden) const {
  return weights_.lm_head.Apply(RmsNorm(hidden, weights_.ln_f, config_.rms_norm_eps));
}

at::Tensor LladaModel::Logits(const at::Tensor& input_ids, const at::Tensor& attention_mask) const {
  return HeadLogits(Hidden(input_ids, attention_mask));
}

}  // namespace unmask::model
