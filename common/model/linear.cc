#include "common/model/linear.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <stdexcept>

#include "common/weights/tensor_view.h"

namespace unmask::model {

struct Linear::QuantizedWeight {
  weights::TensorView view;
  at::ScalarType dtype;
  std::int64_t rows, cols;
};

Linear Linear::Quantized(const weights::TensorView& view, at::ScalarType compute_dtype) {
  Linear l;
  l.quantized_ = std::make_shared<QuantizedWeight>(
      QuantizedWeight{view, compute_dtype == at::kFloat ? at::kFloat : at::kBFloat16, view.rows(), view.cols()});
  return l;
}

namespace {

// Dequantizes `q` into `out` ([rows, cols], contiguous), rows split across the intra-op threads.
void DequantizeInto(const weights::TensorView& view, const at::Tensor& out) {
  const std::int64_t rows = out.size(0), cols = out.size(1);
  const bool f32 = out.scalar_type() == at::kFloat;
  std::string error;
  at::parallel_for(0, rows, 64, [&](std::int64_t begin, std::int64_t end) {
    Status s = f32 ? weights::DequantizeRows(view, begin, end, out.data_ptr<float>() + begin * cols)
                   : weights::DequantizeRowsBf16(view, begin, end,
                                                 reinterpret_cast<std::uint16_t*>(out.data_ptr<at::BFloat16>()) + begin * cols);
    if (!s.ok()) error = s.ToString();
  });
  if (!error.empty()) throw std::runtime_error(error);
}

// One scratch buffer per thread, grown to the largest layer and reused by every layer.
at::Tensor Scratch(std::int64_t rows, std::int64_t cols, at::ScalarType dtype) {
  thread_local at::Tensor buffer;
  const std::int64_t need = rows * cols;
  if (!buffer.defined() || buffer.scalar_type() != dtype || buffer.numel() < need) {
    buffer = at::empty({need}, at::TensorOptions().dtype(dtype));
  }
  return buffer.narrow(0, 0, need).view({rows, cols});
}

}  // namespace

at::Tensor Linear::Apply(const at::Tensor& x) const {
  if (!quantized_) return at::linear(x, weight_);
  const auto& q = *quantized_;
  at::Tensor w = Scratch(q.rows, q.cols, q.dtype);
  DequantizeInto(q.view, w);
  at::Tensor y = at::linear(x.to(q.dtype), w);
  return y.to(x.scalar_type());
}

at::Tensor Linear::weight() const {
  if (!quantized_) return weight_;
  at::Tensor w = at::empty({quantized_->rows, quantized_->cols}, at::TensorOptions().dtype(quantized_->dtype));
  DequantizeInto(quantized_->view, w);
  return w;
}

std::int64_t Linear::out_features() const { return quantized_ ? quantized_->rows : weight_.size(0); }

}  // namespace unmask::model
