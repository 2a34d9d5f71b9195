// Per-layer keys and values of a whole sequence, kept between denoising steps so that a step can
// run only the positions that change (Fast-dLLM's prefix and dual caches).
//
// A cache is filled by LladaModel::HiddenFillCache, a full forward over the sequence [B, L]: for
// every layer it keeps K and V after RoPE, in the compute dtype, with the model's n_kv_heads
// (grouped KV heads are not expanded), plus the key-padding bias of the attention mask. A later
// LladaModel::HiddenSegment runs only a segment [offset, offset + T) of the positions: the segment's
// queries attend to its own fresh keys/values and to the cached ones of every other position, and
// the segment's fresh K/V overwrite the cache at [offset, offset + T). Positions outside the
// segment therefore keep the K/V of the last fill ("stale" by design: that is the approximation
// the fast samplers make, and the reason they refresh the cache at the start of every block).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace unmask::model {

struct KvCache {
  struct Layer {
    at::Tensor k, v;  // [B, n_kv_heads, L, head_dim], after RoPE
  };
  std::vector<Layer> layers;  // one per transformer block; empty = not filled
  at::Tensor key_bias;        // [B, 1, 1, L] additive bias from the attention mask, or undefined
  std::int64_t batch = 0;
  std::int64_t length = 0;  // L, the length of the sequence the cache was filled from

  bool empty() const { return layers.empty(); }
  void Clear();
  // Bytes held by the K/V tensors.
  std::int64_t Bytes() const;
};

}  // namespace unmask::model
