// A bias-free linear layer y = x W^T — the seam where quantized weights plug in: callers only
// see Apply().
//
// Dense: W is a tensor in the compute dtype (possibly a zero-copy view into a mapped file or
// shared segment). Quantized (int8 per channel, int4 group-wise): W stays in its packed bytes in
// the shared segment; Apply() dequantizes it into a per-thread scratch buffer that is reused by
// every quantized layer, so only one layer's weights exist at 16/32 bits at any time.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>

namespace unmask::weights {
struct TensorView;
}

namespace unmask::model {

class Linear {
 public:
  Linear() = default;
  explicit Linear(at::Tensor weight) : weight_(std::move(weight)) {}
  // `view` must stay valid (its segment mapped) for the lifetime of the layer.
  static Linear Quantized(const weights::TensorView& view, at::ScalarType compute_dtype);

  at::Tensor Apply(const at::Tensor& x) const;
  // The dense weight; for a quantized layer, a freshly dequantized copy.
  at::Tensor weight() const;
  std::int64_t out_features() const;
  bool quantized() const { return quantized_ != nullptr; }

 private:
  struct QuantizedWeight;
  at::Tensor weight_;                                // [out, in], compute dtype
  std::shared_ptr<const QuantizedWeight> quantized_;  // or packed bytes in a segment
};

}  // namespace unmask::model
