// A bias-free linear layer y = x W^T. The seam where quantized weights plug in: callers only
// see Apply().
#pragma once

#include <ATen/core/Tensor.h>

namespace unmask::model {

class Linear {
 public:
  Linear() = default;
  explicit Linear(at::Tensor weight) : weight_(std::move(weight)) {}

  at::Tensor Apply(const at::Tensor& x) const;
  const at::Tensor& weight() const { return weight_; }
  std::int64_t out_features() const;

 private:
  at::Tensor weight_;  // [out, in], in the compute dtype
};

}  // namespace unmask::model
