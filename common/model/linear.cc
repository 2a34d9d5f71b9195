#include "common/model/linear.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <stdexcept>
#include <vector>

#include "common/model/small_gemm.h"
#include "common/weights/tensor_view.h"

namespace unmask::model {

// A quantized layer: the segment view (rows path) or its packed bytes as tensors (tensors path).
struct Linear::QuantizedWeight {
  weights::TensorView view;
  at::ScalarType dtype;
  std::int64_t rows, cols;
  // Tensors path only (data defined): int8 q [rows, cols] + f32 scales [rows], or int4 packed
  // uint8 [rows, ceil(cols/2)] + f16 scales [rows, groups] (+ uint8 zeros, asymmetric).
  at::Tensor data, scales, zeros;
};

namespace {

at::ScalarType DequantDType(at::ScalarType compute) { return compute == at::kFloat ? at::kFloat : at::kBFloat16; }

// Rows path: dequantizes the view into `out` ([rows, cols], contiguous, CPU), rows split across
// the intra-op threads.
void DequantizeRowsInto(const weights::TensorView& view, const at::Tensor& out) {
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

// `per_group` ([rows, groups]) broadcast over the `group` columns of each group of `w`.
at::Tensor Grouped(const at::Tensor& per_group, std::int64_t group, std::int64_t cols) {
  return per_group.repeat_interleave(group, 1).narrow(1, 0, cols);
}

// Rows of x up to which the few-row kernel (small_gemm.h) replaces the BLAS for float32 on the
// CPU; bench_small_gemm compares the two.
constexpr std::int64_t kSmallGemmMaxRows = 320;

// x W^T. Float32 products with few rows and no autograd go to the kernel that does not repack W.
at::Tensor Product(const at::Tensor& x, const at::Tensor& w) {
  const bool eligible = SmallGemmEnabled() && x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat &&
                        x.device().is_cpu() && w.device().is_cpu() && w.dim() == 2 && w.is_contiguous() &&
                        x.dim() >= 1 && x.size(-1) == w.size(1) && w.size(1) > 0 &&
                        !(at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad()));
  if (!eligible) return at::linear(x, w);
  const std::int64_t K = w.size(1), N = w.size(0), M = x.numel() / K;
  if (M == 0 || M > kSmallGemmMaxRows) return at::linear(x, w);
  const at::Tensor xc = x.contiguous();
  std::vector<std::int64_t> sizes = x.sizes().vec();
  sizes.back() = N;
  at::Tensor y = at::empty(sizes, x.options());
  SmallGemmF32(xc.data_ptr<float>(), M, K, w.data_ptr<float>(), N, y.data_ptr<float>(), N);
  return y;
}

// One scratch buffer per thread, grown to the largest layer and reused by every layer.
at::Tensor Scratch(std::int64_t rows, std::int64_t cols, at::ScalarType dtype, at::Device device) {
  thread_local at::Tensor buffer;
  const std::int64_t need = rows * cols;
  if (!buffer.defined() || buffer.scalar_type() != dtype || buffer.device() != device || buffer.numel() < need) {
    buffer = at::Tensor();  // free the old one first
    buffer = at::empty({need}, at::TensorOptions().dtype(dtype).device(device));
  }
  return buffer.narrow(0, 0, need).view({rows, cols});
}

// A tensor over `bytes` at `base + offset` on `device` when `on_device`, else a host view copied
// to `device` (no copy when that is the CPU).
at::Tensor PackedTensor(const std::uint8_t* host, const std::uint8_t* device_region, std::uint64_t offset,
                        at::IntArrayRef shape, at::ScalarType dtype, at::Device device) {
  if (device_region != nullptr) {
    return at::from_blob(const_cast<std::uint8_t*>(device_region + offset), shape,
                         at::TensorOptions().dtype(dtype).device(device));
  }
  at::Tensor view = at::from_blob(const_cast<std::uint8_t*>(host), shape, at::TensorOptions().dtype(dtype));
  return device.is_cpu() ? view : view.to(device, /*non_blocking=*/false, /*copy=*/true);
}

}  // namespace

// Tensors path. Every step is exact in the dequantization dtype except the final product with
// the scale, which rounds once, as the rows path does: both give the same bits.
void Linear::Dequantize(const QuantizedWeight& q, const at::Tensor& w) {
  if (!q.data.defined()) return DequantizeRowsInto(q.view, w);
  const auto& info = q.view.quant();
  if (info.scheme == weights::QuantScheme::kInt8PerChannel) {
    w.copy_(q.data);
    w.mul_(q.scales.unsqueeze(1));
    return;
  }
  const std::int64_t pb = q.data.size(1), group = info.group_size;
  at::Tensor lo = q.data.bitwise_and(15), hi = q.data.__rshift__(4);
  if (info.symmetric) {  // two's-complement nibbles: (n ^ 8) - 8
    lo.bitwise_xor_(8);
    hi.bitwise_xor_(8);
  }
  if (q.cols == 2 * pb) {
    at::Tensor pairs = w.view({q.rows, pb, 2});
    pairs.select(2, 0).copy_(lo);
    pairs.select(2, 1).copy_(hi);
  } else {
    w.copy_(at::stack({lo, hi}, 2).view({q.rows, 2 * pb}).narrow(1, 0, q.cols));
  }
  if (info.symmetric) w.sub_(8);
  const bool whole_groups = q.cols % group == 0;
  at::Tensor grouped = whole_groups ? w.view({q.rows, q.cols / group, group}) : w;
  auto per_group = [&](const at::Tensor& t) { return whole_groups ? t.unsqueeze(2) : Grouped(t, group, q.cols); };
  if (!info.symmetric) grouped.sub_(per_group(q.zeros));
  grouped.mul_(per_group(q.scales));
}

Linear Linear::Quantized(const weights::TensorView& view, at::ScalarType compute_dtype) {
  Linear l;
  l.quantized_ =
      std::make_shared<QuantizedWeight>(QuantizedWeight{view, DequantDType(compute_dtype), view.rows(), view.cols(), {}, {}, {}});
  return l;
}

Linear Linear::QuantizedTensors(const weights::TensorView& view, at::ScalarType compute_dtype, at::Device device,
                                const std::uint8_t* device_region) {
  auto q = std::make_shared<QuantizedWeight>(
      QuantizedWeight{view, DequantDType(compute_dtype), view.rows(), view.cols(), {}, {}, {}});
  const auto& entry = *view.entry;
  const auto& info = entry.quant;
  const std::int64_t rows = q->rows, cols = q->cols;
  if (info.scheme == weights::QuantScheme::kInt8PerChannel) {
    q->data = PackedTensor(view.data, device_region, entry.offset, {rows, cols}, at::kChar, device);
    q->scales = PackedTensor(view.scales, device_region, info.scales_offset, {rows}, at::kFloat, device);
  } else {
    const std::int64_t groups = (cols + info.group_size - 1) / info.group_size;
    q->data = PackedTensor(view.data, device_region, entry.offset, {rows, (cols + 1) / 2}, at::kByte, device);
    q->scales = PackedTensor(view.scales, device_region, info.scales_offset, {rows, groups}, at::kHalf, device);
    if (!info.symmetric)
      q->zeros = PackedTensor(view.zeros, device_region, info.zeros_offset, {rows, groups}, at::kByte, device);
  }
  Linear l;
  l.quantized_ = std::move(q);
  return l;
}

at::Device Linear::device() const {
  if (!quantized_) return weight_.device();
  return quantized_->data.defined() ? quantized_->data.device() : at::Device(at::kCPU);
}

at::Tensor Linear::Apply(const at::Tensor& x) const {
  if (!quantized_) return Product(x, weight_);
  const auto& q = *quantized_;
  at::Tensor w = Scratch(q.rows, q.cols, q.dtype, device());
  Dequantize(q, w);
  return Product(x.to(q.dtype), w).to(x.scalar_type());
}

at::Tensor Linear::weight() const {
  if (!quantized_) return weight_;
  at::Tensor w = at::empty({quantized_->rows, quantized_->cols}, at::TensorOptions().dtype(quantized_->dtype).device(device()));
  Dequantize(*quantized_, w);
  return w;
}

std::int64_t Linear::out_features() const { return quantized_ ? quantized_->rows : weight_.size(0); }

}  // namespace unmask::model
