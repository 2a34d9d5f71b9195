// One sequence's part of a packed forward (LladaModel::HiddenPacked): the forward that serves
// many generations in one pass. Every row-wise operation (embedding, norms, projections, MLP, the
// residuals) runs once over the rows of all segments packed together, with no padding; attention
// runs per segment over that segment's own keys, at its own positions, exactly as it would alone.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "common/model/kv_cache.h"

namespace unmask::model {

struct PackedSegment {
  // [R, T]: R rows (a generation's batch rows; doubled with classifier-free guidance) of T tokens.
  at::Tensor ids;
  // true: ids are the whole sequence (positions 0..T-1); `cache`, when set, is refilled from it
  // (what HiddenFillCache does). false: ids are positions [offset, offset + T) of the sequence
  // `cache` was filled from; they attend to their own fresh K/V and the cached K/V of every
  // other position, and their K/V replace the cache's there (what HiddenSegment does).
  bool whole = true;
  std::int64_t offset = 0;
  // Whole sequences only: [R, T], 1 = attend, 0 = padding; undefined = no padding.
  at::Tensor attention_mask;
  // Whole sequences only: [R, T] the RoPE position of every token (Dream's left-padded rows count
  // from their first real token); undefined = 0..T-1 in every row.
  at::Tensor position_ids;
  KvCache* cache = nullptr;  // required when !whole; must outlive the call
  // This segment's attention in chunks of this many query rows (the smaller of it and the
  // model's own setting wins, as with ScopedAttentionChunk); 0: the model's setting.
  std::int64_t attention_query_chunk = 0;
  // 0: bidirectional attention (LLaDA, LLaDA-MoE). Else LLaDA2's block-causal attention: a query
  // in block i sees the keys of blocks <= i, blocks of this many positions counted from position 0
  // of the whole sequence (with a cache: of the sequence it was filled from).
  std::int64_t causal_block = 0;
};

}  // namespace unmask::model
