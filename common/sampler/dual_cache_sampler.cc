#include "common/sampler/dual_cache_sampler.h"

#include <ATen/core/Tensor.h>

#include "common/model/kv_cache.h"
#include "common/model/llada_model.h"

namespace unmask::sampler {
namespace {

class DualCacheForward : public BlockForward {
 public:
  explicit DualCacheForward(const model::LladaModel& model) : model_(model) {}
  at::Tensor BlockHidden(const at::Tensor& x, const at::Tensor& attention_mask, std::int64_t block_start,
                         std::int64_t block_end, std::int64_t step_in_block) override {
    const std::int64_t block_len = block_end - block_start;
    if (step_in_block == 0 || cache_.empty()) {
      return model_.HiddenFillCache(x, attention_mask, &cache_).narrow(1, block_start, block_len);
    }
    return model_.HiddenSegment(x.narrow(1, block_start, block_len), block_start, &cache_);
  }
  std::int64_t CacheBytes() const override { return cache_.Bytes(); }

 private:
  const model::LladaModel& model_;
  model::KvCache cache_;
};

}  // namespace

std::unique_ptr<BlockForward> MakeDualCacheForward(const model::LladaModel& model) {
  return std::make_unique<DualCacheForward>(model);
}

}  // namespace unmask::sampler
