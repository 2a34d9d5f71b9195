// prefix_cache: Fast-dLLM's prefix KV cache on top of block_logits.
//
// Changes relative to block_logits (and so to the reference):
//  - The first step of each block runs the whole sequence, exactly as block_logits does (same
//    result), and keeps every layer's K/V (model::KvCache).
//  - The other steps of the block run the transformer only over positions [block_start, L) — the
//    current block and everything after it — whose queries attend to their own new K/V and to
//    the cached K/V of the positions before the block. Those cached K/V are the ones of the
//    block's first step: tokens before the block no longer change inside the block, but in the
//    reference their K/V still would (bidirectional attention sees the block's newly unmasked
//    tokens); this is the approximation the cache makes, refreshed once per block.
//  - Hence: with one step per block (steps == gen_length / block_length) the output equals
//    block_logits' exactly; otherwise it can differ from the reference's from the second step of
//    a block on. Noise, remasking draws and the EOS switches are as in block_logits.
#pragma once

#include <memory>

#include "common/sampler/block_forward.h"

namespace unmask::sampler {

std::unique_ptr<BlockForward> MakePrefixCacheForward();

}  // namespace unmask::sampler
