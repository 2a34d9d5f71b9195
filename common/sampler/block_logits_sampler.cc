#include "common/sampler/block_logits_sampler.h"

#include <ATen/core/Tensor.h>

#include "common/model/llada_model.h"

namespace unmask::sampler {
namespace {

class BlockLogitsForward : public BlockForward {
 public:
  explicit BlockLogitsForward(const model::LladaModel& model) : model_(model) {}
  at::Tensor BlockHidden(const at::Tensor& x, const at::Tensor& attention_mask, std::int64_t block_start,
                         std::int64_t block_end, std::int64_t) override {
    return model_.Hidden(x, attention_mask).narrow(1, block_start, block_end - block_start);
  }

 private:
  const model::LladaModel& model_;
};

}  // namespace

std::unique_ptr<BlockForward> MakeBlockLogitsForward(const model::LladaModel& model) {
  return std::make_unique<BlockLogitsForward>(model);
}

}  // namespace unmask::sampler
