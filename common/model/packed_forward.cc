// LladaModel::HiddenPacked: the transformer over many sequences' segments in one pass
// (packed_segment.h). Hidden, HiddenFillCache and HiddenSegment are this with one segment, so a
// segment computes the same operations on the same rows whether it runs alone or packed.
#include <ATen/ATen.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/model/fused_ops.h"
#include "common/model/layers.h"
#include "common/model/llada_model.h"
#include "common/model/moe.h"
#include "common/model/threading.h"

namespace unmask::model {

// Per segment, what every layer's attention needs: where its rows start in the packed rows, its
// shape and its key-padding bias.
struct LladaModel::SegmentPlan {
  std::int64_t start = 0, rows = 0, tokens = 0;
  at::Tensor key_bias;
};

// The rotary table rows of every packed row, [N, 1, rotary_dim] each (undefined without rotary
// dims): all segments are rotated at once. Every position's values come from one table of the
// model's whole context, so a row gets the same values whatever else is packed with it.
struct LladaModel::PackedRotary {
  at::Tensor cos, sin;
};

namespace {

void CheckSegment(const PackedSegment& seg, std::size_t index, std::size_t layers) {
  const std::string which = "HiddenPacked: segment " + std::to_string(index);
  TORCH_CHECK(seg.ids.defined() && seg.ids.dim() == 2 && seg.ids.size(0) > 0 && seg.ids.size(1) > 0, which,
              ": ids must be [rows, tokens] with both > 0");
  TORCH_CHECK(seg.causal_block >= 0, which, ": causal_block must not be negative");
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

// y + bias (Dream's q/k/v projections); y itself when the layer has none.
at::Tensor WithBias(at::Tensor y, const at::Tensor& bias) {
  if (!bias.defined()) return y;
  return y.add_(bias);
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
    if (seg.causal_block > 0) {
      const std::int64_t keys = seg.whole ? plan.tokens : seg.cache->length;
      plan.key_bias = WithBlockCausalBias(plan.key_bias, seg.whole ? 0 : seg.offset, plan.tokens, keys,
                                          seg.causal_block, device_);
    }
  }
  return plans;
}

LladaModel::PackedRotary LladaModel::RotaryRows(const std::vector<PackedSegment>& segments,
                                                const std::vector<SegmentPlan>& plans) const {
  std::vector<std::int64_t> positions;
  std::int64_t longest = 0;
  for (std::size_t j = 0; j < segments.size(); ++j) {
    const PackedSegment& seg = segments[j];
    if (seg.whole && seg.position_ids.defined()) {
      const at::Tensor given = seg.position_ids.to(at::kCPU, at::kLong).contiguous();
      TORCH_CHECK(given.sizes() == seg.ids.sizes(), "HiddenPacked: segment ", j, ": position_ids must have the ids' shape");
      const std::int64_t* p = given.data_ptr<std::int64_t>();
      positions.insert(positions.end(), p, p + given.numel());
      longest = std::max(longest, given.max().item<std::int64_t>() + 1);
      continue;
    }
    const std::int64_t first = seg.whole ? 0 : seg.offset;
    for (std::int64_t r = 0; r < plans[j].rows; ++r) {
      for (std::int64_t t = 0; t < plans[j].tokens; ++t) positions.push_back(first + t);
    }
    longest = std::max(longest, first + plans[j].tokens);
  }
  const std::int64_t rd = config_.rotary_dim();
  if (rd == 0) return {};  // LLaDA-MoE's partial_rotary_factor <= 0: no RoPE at all
  RotaryTables tables = rope_;
  if (longest > tables.cos.size(2))  // past the context the config states: a longer table
    tables = MakeRotaryTables(longest, rd, config_.rope_theta, device_);
  const at::Tensor index =
      at::tensor(positions, at::TensorOptions().dtype(at::kLong)).to(device_);
  return {tables.cos.view({-1, rd}).index_select(0, index).unsqueeze(1),
          tables.sin.view({-1, rd}).index_select(0, index).unsqueeze(1)};
}

at::Tensor LladaModel::RotateRows(const at::Tensor& x, const PackedRotary& rope) const {
  if (!rope.cos.defined()) return x;
  const std::int64_t rd = config_.rotary_dim();
  if (rd != x.size(-1)) return ApplyPartialRotaryRows(x, rope.cos, rope.sin, rd);
  if (options_.fused_kernels) {
    if (at::Tensor y = fused::Rotary(x, rope.cos, rope.sin); y.defined()) return y;
  }
  return ApplyRotaryRows(x, rope.cos, rope.sin);
}

at::Tensor LladaModel::Norm(const at::Tensor& x, const at::Tensor& weight) const {
  if (options_.fused_kernels) {
    if (at::Tensor y = fused::RmsNorm(x, weight, config_.rms_norm_eps); y.defined()) return y;
  }
  return RmsNorm(x, weight, config_.rms_norm_eps);
}

at::Tensor LladaModel::SiluTimes(const at::Tensor& gate, const at::Tensor& up) const {
  if (options_.fused_kernels) {
    if (at::Tensor y = fused::SiluMul(gate, up); y.defined()) return y;
  }
  return model::SiluTimes(gate, up);
}

at::Tensor LladaModel::SegmentAttention(const at::Tensor& q2, const at::Tensor& k2, const at::Tensor& v2,
                                        const PackedSegment& seg, const SegmentPlan& plan, std::size_t layer) const {
  const auto r = plan.rows, t = plan.tokens, hd = config_.head_dim();
  // q and k arrive rotated ([N, heads, head_dim]), v as projected ([N, kv_heads * head_dim]).
  at::Tensor q = q2.narrow(0, plan.start, r * t).view({r, t, config_.n_heads, hd}).transpose(1, 2);
  at::Tensor k = k2.narrow(0, plan.start, r * t).view({r, t, config_.n_kv_heads, hd}).transpose(1, 2);
  at::Tensor v = v2.narrow(0, plan.start, r * t).view({r, t, config_.n_kv_heads, hd}).transpose(1, 2);
  const std::int64_t offset = seg.whole ? 0 : seg.offset;
  if (seg.cache != nullptr) {
    KvCache::Layer& kv = seg.cache->layers[layer];
    if (seg.whole) {  // copies of its own: k and v are views of the rows of every segment
      kv.k = k.clone(at::MemoryFormat::Contiguous);
      kv.v = v.clone(at::MemoryFormat::Contiguous);
    } else {
      kv.k.narrow(2, offset, t).copy_(k);
      kv.v.narrow(2, offset, t).copy_(v);
      k = kv.k;
      v = kv.v;
    }
  }
  ScopedAttentionChunk chunk(seg.attention_query_chunk);
  at::Tensor att = Attention(q, k, v, plan.key_bias, ScopedAttentionChunk::Effective(options_.attention_query_chunk));
  return att.transpose(1, 2).contiguous().view({r * t, config_.q_width()});
}

at::Tensor LladaModel::PackedBlock(const LladaBlockWeights& blk, const at::Tensor& x,
                                   const std::vector<PackedSegment>& segments, const std::vector<SegmentPlan>& plans,
                                   const PackedRotary& rope, std::size_t layer) const {
  const std::int64_t n = x.size(0), hd = config_.head_dim();
  at::Tensor h = Norm(x, blk.attn_norm);
  at::Tensor q = WithBias(blk.q_proj.Apply(h), blk.q_bias).view({n, config_.n_heads, hd});
  at::Tensor k = WithBias(blk.k_proj.Apply(h), blk.k_bias).view({n, config_.n_kv_heads, hd});
  if (blk.q_norm.defined()) {  // QK-norm over each head's dims, before RoPE
    q = Norm(q, blk.q_norm);
    k = Norm(k, blk.k_norm);
  }
  q = RotateRows(q, rope);
  k = RotateRows(k, rope);
  const at::Tensor v = WithBias(blk.v_proj.Apply(h), blk.v_bias);
  // Each segment's attention on one thread, the segments spread over the pool: a segment's
  // attention is a few small operators, computed the same way whatever else is packed.
  std::vector<at::Tensor> parts(segments.size());
  ForEachItem(static_cast<std::int64_t>(segments.size()), x.device().is_cpu(), [&](std::int64_t j) {
    parts[j] = SegmentAttention(q, k, v, segments[j], plans[j], layer);
  });
  const at::Tensor att = parts.size() == 1 ? parts[0] : at::cat(parts, 0);
  at::Tensor out = x + blk.attn_out.Apply(att);

  h = Norm(out, blk.ff_norm);
  if (!blk.moe.empty()) return out + MoeForward(config_, blk.moe, h, static_cast<std::int64_t>(layer));
  return out + blk.ff_out.Apply(SiluTimes(blk.ff_proj.Apply(h), blk.up_proj.Apply(h)));
}

struct LladaModel::ForwardPlan {
  std::vector<PackedSegment> segments;
  std::vector<SegmentPlan> plans;
  PackedRotary rope;
};

std::shared_ptr<const LladaModel::ForwardPlan> LladaModel::PlanForward(const std::vector<PackedSegment>& segments) const {
  TORCH_CHECK(!segments.empty(), "HiddenPacked: no segments");
  auto plan = std::make_shared<ForwardPlan>();
  plan->segments = segments;
  plan->plans = PlanSegments(segments);
  plan->rope = RotaryRows(segments, plan->plans);
  return plan;
}

std::vector<at::Tensor> LladaModel::RunForward(const ForwardPlan& plan) const {
  const auto& segments = plan.segments;
  std::vector<at::Tensor> flat;
  flat.reserve(segments.size());
  for (const auto& seg : segments) flat.push_back(seg.ids.reshape({-1}));
  at::Tensor x = Embed(flat.size() == 1 ? flat[0] : at::cat(flat, 0));  // [N, d_model]
  for (std::size_t i = 0; i < weights_.blocks.size(); ++i)
    x = PackedBlock(weights_.blocks[i], x, segments, plan.plans, plan.rope, i);
  std::vector<at::Tensor> hidden;
  hidden.reserve(segments.size());
  for (const auto& p : plan.plans)
    hidden.push_back(x.narrow(0, p.start, p.rows * p.tokens).view({p.rows, p.tokens, config_.d_model}));
  return hidden;
}

std::vector<at::Tensor> LladaModel::HiddenPacked(const std::vector<PackedSegment>& segments) const {
  return RunForward(*PlanForward(segments));
}

}  // namespace unmask::model
