// dual_cache: Fast-dLLM's dual KV cache: prefix_cache, plus the positions after the block.
//
// Changes relative to prefix_cache (and so to block_logits and the reference):
//  - The first step of each block runs the whole sequence, exactly as block_logits does (same
//    result), and keeps every layer's K/V (model::KvCache).
//  - The other steps of the block run the transformer only over the block's own rows
//    [block_start, block_end): their queries attend to their own new K/V and to the cached K/V of
//    every position before the block (the prefix) and after it (the suffix, still all masks in
//    the reference's semi-autoregressive order, or EOS after an early stop). In the reference
//    the suffix's K/V would change as the block is unmasked; the cache keeps those of the
//    block's first step, refreshed once per block.
//  - Hence: with one step per block the output equals block_logits' exactly; otherwise it can
//    differ from the reference's from the second step of a block on. A step costs a full
//    forward only once per block; the others cost block_length rows of MLP/projections and a
//    block_length x L attention.
#pragma once

#include <memory>

#include "common/sampler/block_forward.h"

namespace unmask::sampler {

std::unique_ptr<BlockForward> MakeDualCacheForward();

}  // namespace unmask::sampler
