// LladaModel::HiddenPacked: the transformer over many sequences' segments in one pass
// (packed_segment.h). Hidden, HiddenFillCache and HiddenSegment are this with one segment, so a
// segment computes the same operations on the same rows whether it runs alone or packed.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "common/model/layers.h"
#include "common/model/llada_model.h"

namespace unmask::model {

// Per segment, what every layer's attention needs: where its rows start in the packed rows, its
// shape, its rotary tables and its key-padding bias.
struct LladaModel::SegmentPlan {
  std::int64_t start = 0, rows = 0, tokens = 0;
  RotaryTables rope;
  at::Tensor key_bias;
};

namespace {

void CheckSegment(const PackedSegment& seg, std::size_t index, std::size_t layers) {
  const std::string which = "HiddenPacked: segment " + std::to_string(index);
  TORCH_CHECK(seg.ids.defined() && seg.ids.dim() == 2 && seg.ids.size(0) > 0 && seg.ids.size(1) > 0, which,
              ": ids must be [rows, tokens] with both > 0");
  if (seg.whole) {
    TORCH_CHECK(!seg.attention_mask.defined() || seg.attention_mask.sizes() == seg.ids.sizes(), which,
                ": attention_mask must have the ids' shape");
    return;
  }
  const KvCache* cache = seg.cache;
  TORCH_CHECK(cache != nullptr && !cache->empty(), which, ": the cache is not filled");
  TORCH_CHECK(cache->layers.size() == layers, which, ": the cache has ", cache->layers.size(), " layers, the model ",
              layers);
  TORCH_CHECK(seg.ids.size(0) == cache->batch, which, ": segment batch ", seg.ids.size(0), " != cache batch ",
              cache->batch);
  TORCH_CHECK(seg.offset >= 0 && seg.offset + seg.ids.size(1) <= cache->length, which, ": segment [", seg.offset, ", ",
              seg.offset + seg.ids.size(1), ") is outside the cached length ", cache->length);
}

}  // namespace

std::vector<LladaModel::SegmentPlan> LladaModel::PlanSegments(const std::vector<PackedSegment>& segments) const {
  std::vector<SegmentPlan> plans(segments.size());
  std::int64_t start = 0;
  for (std::size_t j = 0; j < segments.size(); ++j) {
    const PackedSegment& seg = segments[j];
    CheckSegment(seg, j, weights_.blocks.size());
    SegmentPlan& plan = plans[j];
    plan.start = start;
    plan.rows = seg.ids.size(0);
    plan.tokens = seg.ids.size(1);
    start += plan.rows * plan.tokens;
    if (seg.whole && seg.cache != nullptr) {
      KvCache* cache = seg.cache;
      cache->Clear();
      cache->layers.resize(weights_.blocks.size());
      cache->batch = plan.rows;
      cache->length = plan.tokens;
      cache->key_bias = KeyPaddingBias(seg.attention_mask);
    }
    plan.key_bias = seg.whole ? KeyPaddingBias(seg.attention_mask) : seg.cache->key_bias;
    // A segment's tables span its whole sequence (the cached length for a part), as a fill
    // makes them, so that every position gets the same sin/cos values it gets there.
    const std::int64_t length = seg.whole ? plan.tokens : seg.cache->length;
    for (std::size_t i = 0; i < j && !plan.rope.sin.defined(); ++i) {
      if (plans[i].rope.sin.size(2) == length) plan.rope = plans[i].rope;
    }
    if (!plan.rope.sin.defined()) plan.rope = MakeRotaryTables(length, config_.head_dim(), config_.rope_theta, device_);
  }
  return plans;
}

at::Tensor LladaModel::SegmentAttention(const at::Tensor& q2, const at::Tensor& k2, const at::Tensor& v2,
                                        const PackedSegment& seg, const SegmentPlan& plan, std::size_t layer) const {
  const auto r = plan.rows, t = plan.tokens, hd = config_.head_dim();
  at::Tensor q = q2.narrow(0, plan.start, r * t).view({r, t, config_.n_heads, hd}).transpose(1, 2);
  at::Tensor k = k2.narrow(0, plan.start, r * t).view({r, t, config_.n_kv_heads, hd}).transpose(1, 2);
  at::Tensor v = v2.narrow(0, plan.start, r * t).view({r, t, config_.n_kv_heads, hd}).transpose(1, 2);
  const std::int64_t offset = seg.whole ? 0 : seg.offset;
  q = ApplyRotary(q, plan.rope, offset);
  k = ApplyRotary(k, plan.rope, offset);
  if (seg.cache != nullptr) {
    KvCache::Layer& kv = seg.cache->layers[layer];
    if (seg.whole) {
      kv.k = k;
      kv.v = v;
    } else {
      kv.k.narrow(2, offset, t).copy_(k);
      kv.v.narrow(2, offset, t).copy_(v);
      k = kv.k;
      v = kv.v;
    }
  }
  ScopedAttentionChunk chunk(seg.attention_query_chunk);
  at::Tensor att = Attention(q, k, v, plan.key_bias, ScopedAttentionChunk::Effective(options_.attention_query_chunk));
  return att.transpose(1, 2).contiguous().view({r * t, config_.d_model});
}

at::Tensor LladaModel::PackedBlock(const LladaBlockWeights& blk, const at::Tensor& x,
                                   const std::vector<PackedSegment>& segments, const std::vector<SegmentPlan>& plans,
                                   std::size_t layer) const {
  at::Tensor h = RmsNorm(x, blk.attn_norm, config_.rms_norm_eps);
  const at::Tensor q = blk.q_proj.Apply(h);
  const at::Tensor k = blk.k_proj.Apply(h);
  const at::Tensor v = blk.v_proj.Apply(h);
  std::vector<at::Tensor> parts;
  parts.reserve(segments.size());
  for (std::size_t j = 0; j < segments.size(); ++j) parts.push_back(SegmentAttention(q, k, v, segments[j], plans[j], layer));
  const at::Tensor att = parts.size() == 1 ? parts[0] : at::cat(parts, 0);
  at::Tensor out = x + blk.attn_out.Apply(att);

  h = RmsNorm(out, blk.ff_norm, config_.rms_norm_eps);
  at::Tensor gate = at::silu(blk.ff_proj.Apply(h));
  return out + blk.ff_out.Apply(gate * blk.up_proj.Apply(h));
}

std::vector<at::Tensor> LladaModel::HiddenPacked(const std::vector<PackedSegment>& segments) const {
  TORCH_CHECK(!segments.empty(), "HiddenPacked: no segments");
  const std::vector<SegmentPlan> plans = PlanSegments(segments);
  std::vector<at::Tensor> flat;
  flat.reserve(segments.size());
  for (const auto& seg : segments) flat.push_back(seg.ids.reshape({-1}));
  at::Tensor x = Embed(flat.size() == 1 ? flat[0] : at::cat(flat, 0));  // [N, d_model]
  for (std::size_t i = 0; i < weights_.blocks.size(); ++i) x = PackedBlock(weights_.blocks[i], x, segments, plans, i);
  std::vector<at::Tensor> hidden;
  hidden.reserve(segments.size());
  for (const auto& plan : plans)
    hidden.push_back(x.narrow(0, plan.start, plan.rows * plan.tokens).view({plan.rows, plan.tokens, config_.d_model}));
  return hidden;
}

}  // namespace unmask::model
