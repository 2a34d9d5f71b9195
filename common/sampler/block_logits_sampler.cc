#include "common/sampler/block_logits_sampler.h"

#include <ATen/core/Tensor.h>

namespace unmask::sampler {
namespace {

class BlockLogitsForward : public BlockForward {
 public:
  model::PackedSegment Segment(const at::Tensor& x, const at::Tensor& attention_mask, std::int64_t, std::int64_t,
                               std::int64_t) override {
    model::PackedSegment whole;
    whole.ids = x;
    whole.attention_mask = attention_mask;
    return whole;
  }
};

}  // namespace

std::unique_ptr<BlockForward> MakeBlockLogitsForward() { return std::make_unique<BlockLogitsForward>(); }

}  // namespace unmask::sampler
