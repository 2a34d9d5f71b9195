// The two cache modes' forwards (prefix_cache_sampler.h, dual_cache_sampler.h): the first step of
// each block refills the K/V cache from the whole sequence; the other steps run a part of it
// against the cache, the block and everything after it (prefix) or the block alone (dual).
#include <ATen/core/Tensor.h>

#include "common/model/kv_cache.h"
#include "common/sampler/dual_cache_sampler.h"
#include "common/sampler/prefix_cache_sampler.h"

namespace unmask::sampler {
namespace {

class CachedForward : public BlockForward {
 public:
  explicit CachedForward(bool suffix) : suffix_(suffix) {}
  model::PackedSegment Segment(const at::Tensor& x, const at::Tensor& attention_mask, std::int64_t block_start,
                               std::int64_t block_end, std::int64_t step_in_block) override {
    model::PackedSegment seg;
    seg.cache = &cache_;
    if (step_in_block == 0 || cache_.empty()) {  // refill from the whole sequence
      seg.ids = x;
      seg.attention_mask = attention_mask;
      return seg;
    }
    seg.whole = false;
    seg.offset = block_start;
    seg.ids = x.narrow(1, block_start, (suffix_ ? x.size(1) : block_end) - block_start);
    return seg;
  }
  std::int64_t CacheBytes() const override { return cache_.Bytes(); }

 private:
  const bool suffix_;  // the part runs to the end of the sequence (prefix cache), or ends with the block (dual)
  model::KvCache cache_;
};

}  // namespace

std::unique_ptr<BlockForward> MakePrefixCacheForward() { return std::make_unique<CachedForward>(/*suffix=*/true); }
std::unique_ptr<BlockForward> MakeDualCacheForward() { return std::make_unique<CachedForward>(/*suffix=*/false); }

}  // namespace unmask::sampler
