// The one thing the fast sampling modes do differently from each other: which forward a
// denoising step runs to get the hidden states (before ln_f) of the current block's rows. The
// shared step (fast_sampler.cc) turns them into logits, confidences and unmasked tokens. The
// forward is described, not run, so that a batcher can pack the forwards of many generations
// into one pass (model::LladaModel::HiddenPacked).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

#include "common/model/packed_segment.h"

namespace unmask::model {
class LladaModel;
}

namespace unmask::sampler {

class BlockForward {
 public:
  virtual ~BlockForward() = default;
  // x: the whole sequence [B, L] as it stands before this step (B doubled with classifier-free
  // guidance); attention_mask: [B, L] or undefined. step_in_block is 0 on the first step of each
  // block. The segment's hidden states cover [block_start, block_end) (at
  // block_start - offset for a part, at block_start for a whole sequence). The segment may point
  // at this object's cache, which must then outlive the forward.
  virtual model::PackedSegment Segment(const at::Tensor& x, const at::Tensor& attention_mask, std::int64_t block_start,
                                       std::int64_t block_end, std::int64_t step_in_block) = 0;
  // Bytes of K/V this forward keeps between steps (0 without a cache).
  virtual std::int64_t CacheBytes() const { return 0; }
};

}  // namespace unmask::sampler
