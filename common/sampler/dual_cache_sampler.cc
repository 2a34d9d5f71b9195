#include "common/sampler/dual_cache_sampler.h"

#include <ATen/core/Tensor.h>

#include "common/model/kv_cache.h"

namespace unmask::sampler {
namespace {

class DualCacheForward : public BlockForward {
 public:
  model::PackedSegment Segment(const at::Tensor& x, const at::Tensor& attention_mask, std::int64_t block_start,
                               std::int64_t block_end, std::int64_t step_in_block) override {
    model::PackedSegment seg;
    seg.cache = &cache_;
    if (step_in_block == 0 || cache_.empty()) {  // refill from the whole sequence
      seg.ids = x;
      seg.attention_mask = attention_mask;
      return seg;
    }
    seg.whole = false;  // the block alone
    seg.offset = block_start;
    seg.ids = x.narrow(1, block_start, block_end - block_start);
    return seg;
  }
  std::int64_t CacheBytes() const override { return cache_.Bytes(); }

 private:
  model::KvCache cache_;
};

}  // namespace

std::unique_ptr<BlockForward> MakeDualCacheForward() { return std::make_unique<DualCacheForward>(); }

}  // namespace unmask::sampler
