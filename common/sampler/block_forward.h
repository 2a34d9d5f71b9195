// The one thing the fast sampling modes do differently from each other: how a denoising step gets
// the hidden states (before ln_f) of the current block's rows. The shared loop (fast_sampler.cc)
// turns them into logits, confidences and unmasked tokens.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

namespace unmask::model {
class LladaModel;
}

namespace unmask::sampler {

class BlockForward {
 public:
  virtual ~BlockForward() = default;
  // x: the whole sequence [B, L] as it stands before this step (B doubled with classifier-free
  // guidance); attention_mask: [B, L] or undefined. step_in_block is 0 on the first step of each
  // block. Returns [B, block_end - block_start, d_model].
  virtual at::Tensor BlockHidden(const at::Tensor& x, const at::Tensor& attention_mask, std::int64_t block_start,
                                 std::int64_t block_end, std::int64_t step_in_block) = 0;
  // Bytes of K/V this forward keeps between steps (0 without a cache).
  virtual std::int64_t CacheBytes() const { return 0; }
};

}  // namespace unmask::sampler
