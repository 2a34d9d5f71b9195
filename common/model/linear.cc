#include "common/model/linear.h"

#include <ATen/ATen.h>

namespace unmask::model {

at::Tensor Linear::Apply(const at::Tensor& x) const { return at::linear(x, weight_); }

std::int64_t Linear::out_features() const { return weight_.size(0); }

}  // namespace unmask::model
