#include "common/model/llada_model.h"

#include <ATen/ATen.h>

#include "common/model/layers.h"
#include "common/model/torch_util.h"
#include "common/segment/weight_view.h"

namespace unmask::model {

StatusOr<std::unique_ptr<LladaModel>> LladaModel::Load(const std::string& dir, const ModelOptions& options) {
  UNMASK_ASSIGN_OR_RETURN(auto config, checkpoint::LladaConfig::FromFile(dir + "/config.json"));
  UNMASK_ASSIGN_OR_RETURN(auto ckpt, checkpoint::Checkpoint::Open(dir));
  UNMASK_ASSIGN_OR_RETURN(c10::Device device, ParseDevice(options.device));
  std::shared_ptr<const checkpoint::Checkpoint> shared(std::move(ckpt));
  UNMASK_ASSIGN_OR_RETURN(auto weights, LoadLladaWeights(config, shared, options));
  return std::make_unique<LladaModel>(std::move(config), std::move(weights), options, device);
}

StatusOr<std::unique_ptr<LladaModel>> LladaModel::FromSegment(std::shared_ptr<const weights::AttachedModel> segment,
                                                            const ModelOptions& options) {
  UNMASK_ASSIGN_OR_RETURN(auto config, checkpoint::LladaConfig::FromJsonText(
                                           segment->manifest().config_json, "segment " + segment->segment().name() + " config"));
  UNMASK_ASSIGN_OR_RETURN(c10::Device device, ParseDevice(options.device));
  UNMASK_ASSIGN_OR_RETURN(auto weights, LoadLladaWeightsFromSegment(config, segment, options));
  return std::make_unique<LladaModel>(std::move(config), std::move(weights), options, device);
}

LladaModel::LladaModel(checkpoint::LladaConfig config, LladaWeights weights, ModelOptions options,
                       c10::Device device)
    : config_(std::move(config)), weights_(std::move(weights)), options_(std::move(options)), device_(device) {}

at::ScalarType LladaModel::compute_dtype() const { return ToScalarType(options_.precision); }

// The table may be kept in its storage type (bf16 computed in fp32): rows are widened as looked up.
at::Tensor LladaModel::Embed(const at::Tensor& ids) const {
  at::Tensor x = at::embedding(weights_.wte, ids);
  return x.scalar_type() == compute_dtype() ? x : x.to(compute_dtype());
}

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
  at::Tensor att = Attention(q, k, v, key_bias, ScopedAttentionChunk::Effective(options_.attention_query_chunk));
  att = att.transpose(1, 2).contiguous().view({b, t, config_.d_model});
  at::Tensor out = x + blk.attn_out.Apply(att);

  h = RmsNorm(out, blk.ff_norm, config_.rms_norm_eps);
  at::Tensor gate = at::silu(blk.ff_proj.Apply(h));
  return out + blk.ff_out.Apply(gate * blk.up_proj.Apply(h));
}

at::Tensor LladaModel::Hidden(const at::Tensor& input_ids, const at::Tensor& attention_mask) const {
  at::Tensor x = Embed(input_ids);
  const RotaryTables rope = MakeRotaryTables(input_ids.size(1), config_.head_dim(), config_.rope_theta, device_);
  const at::Tensor key_bias = KeyPaddingBias(attention_mask);
  for (const auto& blk : weights_.blocks) x = Block(blk, x, rope, key_bias);
  return x;
}

at::Tensor LladaModel::CachedBlock(const LladaBlockWeights& blk, const at::Tensor& x, const RotaryTables& rope,
                                   std::int64_t offset, const at::Tensor& key_bias, KvCache::Layer* kv,
                                   bool fill) const {
  // The operations of Block(), in the same order; only where K/V come from differs.
  const auto b = x.size(0), t = x.size(1);
  const auto hd = config_.head_dim();
  at::Tensor h = RmsNorm(x, blk.attn_norm, config_.rms_norm_eps);
  at::Tensor q = blk.q_proj.Apply(h).view({b, t, config_.n_heads, hd}).transpose(1, 2);
  at::Tensor k = blk.k_proj.Apply(h).view({b, t, config_.n_kv_heads, hd}).transpose(1, 2);
  at::Tensor v = blk.v_proj.Apply(h).view({b, t, config_.n_kv_heads, hd}).transpose(1, 2);
  q = ApplyRotary(q, rope, offset);
  k = ApplyRotary(k, rope, offset);
  if (fill) {
    kv->k = k;
    kv->v = v;
  } else {
    kv->k.narrow(2, offset, t).copy_(k);
    kv->v.narrow(2, offset, t).copy_(v);
  }
  at::Tensor att = Attention(q, kv->k, kv->v, key_bias, ScopedAttentionChunk::Effective(options_.attention_query_chunk));
  att = att.transpose(1, 2).contiguous().view({b, t, config_.d_model});
  at::Tensor out = x + blk.attn_out.Apply(att);

  h = RmsNorm(out, blk.ff_norm, config_.rms_norm_eps);
  at::Tensor gate = at::silu(blk.ff_proj.Apply(h));
  return out + blk.ff_out.Apply(gate * blk.up_proj.Apply(h));
}

at::Tensor LladaModel::HiddenFillCache(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                       KvCache* cache) const {
  TORCH_CHECK(cache != nullptr, "HiddenFillCache: no cache");
  cache->Clear();
  cache->layers.resize(weights_.blocks.size());
  cache->batch = input_ids.size(0);
  cache->length = input_ids.size(1);
  cache->key_bias = KeyPaddingBias(attention_mask);
  at::Tensor x = Embed(input_ids);
  const RotaryTables rope = MakeRotaryTables(cache->length, config_.head_dim(), config_.rope_theta, device_);
  for (std::size_t i = 0; i < weights_.blocks.size(); ++i)
    x = CachedBlock(weights_.blocks[i], x, rope, 0, cache->key_bias, &cache->layers[i], /*fill=*/true);
  return x;
}

at::Tensor LladaModel::HiddenSegment(const at::Tensor& segment_ids, std::int64_t offset, KvCache* cache) const {
  TORCH_CHECK(cache != nullptr && !cache->empty(), "HiddenSegment: the cache is not filled");
  TORCH_CHECK(cache->layers.size() == weights_.blocks.size(), "HiddenSegment: the cache has ", cache->layers.size(),
              " layers, the model ", weights_.blocks.size());
  TORCH_CHECK(segment_ids.dim() == 2 && segment_ids.size(0) == cache->batch, "HiddenSegment: segment batch ",
              segment_ids.size(0), " != cache batch ", cache->batch);
  TORCH_CHECK(offset >= 0 && offset + segment_ids.size(1) <= cache->length, "HiddenSegment: segment [", offset, ", ",
              offset + segment_ids.size(1), ") is outside the cached length ", cache->length);
  at::Tensor x = Embed(segment_ids);
  // Tables over the cached length, as the fill made them, so that every position gets the
  // same sin/cos values it got there.
  const RotaryTables rope = MakeRotaryTables(cache->length, config_.head_dim(), config_.rope_theta, device_);
  for (std::size_t i = 0; i < weights_.blocks.size(); ++i)
    x = CachedBlock(weights_.blocks[i], x, rope, offset, cache->key_bias, &cache->layers[i], /*fill=*/false);
  return x;
}

at::Tensor LladaModel::HeadLogits(const at::Tensor& hidden) const {
  return weights_.lm_head.Apply(RmsNorm(hidden, weights_.ln_f, config_.rms_norm_eps));
}

at::Tensor LladaModel::Logits(const at::Tensor& input_ids, const at::Tensor& attention_mask) const {
  return HeadLogits(Hidden(input_ids, attention_mask));
}

}  // namespace unmask::model
