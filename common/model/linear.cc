#include "common/model/linear.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "common/model/fused_ops.h"
#include "common/model/small_gemm.h"
#include "common/model/threading.h"
#include "common/quant/quant_policy.h"
#include "common/segment/tensor_view.h"

namespace unmask::model {

// A quantized layer: the segment view (rows path) or its packed bytes as tensors (tensors path).
struct Linear::QuantizedWeight {
  weights::TensorView view;
  at::ScalarType dtype;
  std::int64_t rows, cols;
  // Tensors path only (data defined): int8 q [rows, cols] + f32 scales [rows], or int4 packed
  // uint8 [rows, ceil(cols/2)] + f16 scales [rows, groups] (+ uint8 zeros, asymmetric).
  at::Tensor data, scales, zeros;
  // Tensors path on a GPU: one fused kernel a layer (fused_ops.h) instead of ATen's operators.
  bool fused = false;
};

namespace {

at::ScalarType DequantDType(at::ScalarType compute) { return compute == at::kFloat ? at::kFloat : at::kBFloat16; }

// Rows path: dequantizes rows [first, first + out.size(0)) of the view into `out` ([rows, cols],
// contiguous, CPU), rows split across the intra-op threads.
void DequantizeRowsInto(const weights::TensorView& view, std::int64_t first, const at::Tensor& out) {
  const std::int64_t rows = out.size(0), cols = out.size(1);
  const bool f32 = out.scalar_type() == at::kFloat;
  std::string error;
  at::parallel_for(0, rows, 64, [&](std::int64_t begin, std::int64_t end) {
    Status s = f32 ? weights::DequantizeRows(view, first + begin, first + end, out.data_ptr<float>() + begin * cols)
                   : weights::DequantizeRowsBf16(view, first + begin, first + end,
                                                 reinterpret_cast<std::uint16_t*>(out.data_ptr<at::BFloat16>()) + begin * cols);
    if (!s.ok()) error = s.ToString();
  });
  if (!error.empty()) throw std::runtime_error(error);
}

// `per_group` ([rows, groups]) broadcast over the `group` columns of each group of `w`.
at::Tensor Grouped(const at::Tensor& per_group, std::int64_t group, std::int64_t cols) {
  return per_group.repeat_interleave(group, 1).narrow(1, 0, cols);
}

// x W^T through the BLAS. Where ConfigureThreading held the BLAS to one thread (threading.h),
// a large product is split by output columns across the intra-op pool instead, one BLAS call
// per chunk. A column is computed by the same BLAS kernels, though not always to the same bits as
// in one whole call: OpenBLAS's pthreads build on a Zen 5 EPYC sums a column differently with a
// different number of columns (about 1e-5 apart at K = 64).
at::Tensor BlasProduct(const at::Tensor& x, const at::Tensor& w) {
  const bool split = BlasHeldToOneThread() && x.device().is_cpu() && w.device().is_cpu() && w.dim() == 2 &&
                     x.dim() >= 1 && x.size(-1) == w.size(1) && x.scalar_type() == w.scalar_type() &&
                     !at::in_parallel_region() &&
                     !(at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad()));
  const std::int64_t K = w.size(1), N = w.size(0), M = K > 0 ? x.numel() / K : 0;
  const int threads = at::get_num_threads();
  if (!split || threads < 2 || M * N * K < (std::int64_t{1} << 22) || N < 2 * threads) return at::linear(x, w);
  const at::Tensor x2 = x.reshape({M, K});
  at::Tensor y = at::empty({M, N}, x.options());
  at::parallel_for(0, N, (N + threads - 1) / threads, [&](std::int64_t begin, std::int64_t end) {
    y.narrow(1, begin, end - begin).copy_(at::mm(x2, w.narrow(0, begin, end - begin).t()));
  });
  std::vector<std::int64_t> sizes = x.sizes().vec();
  sizes.back() = N;
  return y.view(sizes);
}

// bf16 x times a bf16 W where the CPU multiplies bf16 pairs natively (AVX512_BF16): the few-row
// kernel, each sum rounded to bf16 as it is stored, in chunks of rows (Bf16ChunkRows). oneDNN's
// fixed cost per call was most of a 32-row product at these widths; and here a row's bits never
// depend on how many rows share the call (a job alone and in a packed batch agree).
bool TakesBf16Pairs(const at::Tensor& x, const at::Tensor& w, GemmPath path) {
  return x.scalar_type() == at::kBFloat16 && w.scalar_type() == at::kBFloat16 && SmallGemmBf16Native(path) &&
         x.device().is_cpu() && w.device().is_cpu() && w.dim() == 2 && w.is_contiguous() && x.dim() >= 1 &&
         x.size(-1) == w.size(1) && w.size(1) > 0 &&
         !(at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad()));
}

// Rows of x per kernel call for bf16 pairs: at most kSmallGemmMaxRows, and no more than fit in
// 1 MiB, since every 4 rows of W read the whole chunk again (at an 8B model's width, K = 4096,
// 320 rows took 1.5x the time per row of 128).
std::int64_t Bf16ChunkRows(std::int64_t K) {
  return std::clamp<std::int64_t>((std::int64_t{1} << 20) / (2 * K), 6, kSmallGemmMaxRows);
}

at::Tensor Bf16PairsProduct(const at::Tensor& x, const at::Tensor& w, GemmPath path) {
  const std::int64_t K = w.size(1), N = w.size(0), M = x.numel() / K, chunk = Bf16ChunkRows(K);
  const at::Tensor xc = x.contiguous();
  std::vector<std::int64_t> sizes = x.sizes().vec();
  sizes.back() = N;
  at::Tensor y = at::empty(sizes, x.options());
  const auto* xp = reinterpret_cast<const std::uint16_t*>(xc.data_ptr<at::BFloat16>());
  const auto* wp = reinterpret_cast<const std::uint16_t*>(w.data_ptr<at::BFloat16>());
  auto* yp = reinterpret_cast<std::uint16_t*>(y.data_ptr<at::BFloat16>());
  for (std::int64_t m = 0; m < M; m += chunk)
    SmallGemmBf16Rounded(path, xp + m * K, std::min(chunk, M - m), K, wp, N, yp + m * N, N);
  return y;
}

// x W^T. Float32 x with no autograd goes to the active few-row kernel, which reads a float32 or
// bf16 W in place (bf16 widened to float32 as it is loaded): a float32 W up to kSmallGemmMaxRows
// rows of x (past that the BLAS's packing pays off), a bf16 W at any row count, in chunks of that
// many rows (widening W for the BLAS would copy it whole at every call). Elsewhere a bf16 W with
// float32 x is widened first and goes to the BLAS in float32. bf16 x with a bf16 W: see
// TakesBf16Pairs, else the BLAS (oneDNN) in bf16.
at::Tensor Product(const at::Tensor& x, const at::Tensor& w) {
  const GemmPath path = ActiveGemmPath();
  if (TakesBf16Pairs(x, w, path)) return Bf16PairsProduct(x, w, path);
  const bool f32_x = x.scalar_type() == at::kFloat;
  const bool bf16_w = w.scalar_type() == at::kBFloat16;
  const bool eligible = path != GemmPath::kBlas && f32_x && (w.scalar_type() == at::kFloat || bf16_w) &&
                        x.device().is_cpu() && w.device().is_cpu() && w.dim() == 2 && w.is_contiguous() &&
                        x.dim() >= 1 && x.size(-1) == w.size(1) && w.size(1) > 0 &&
                        !(at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad()));
  const std::int64_t M = eligible ? x.numel() / w.size(1) : 0;
  if (!eligible || M == 0 || (M > kSmallGemmMaxRows && !bf16_w)) {
    return f32_x && bf16_w ? BlasProduct(x, w.to(at::kFloat)) : BlasProduct(x, w);
  }
  const std::int64_t K = w.size(1), N = w.size(0);
  const at::Tensor xc = x.contiguous();
  std::vector<std::int64_t> sizes = x.sizes().vec();
  sizes.back() = N;
  at::Tensor y = at::empty(sizes, x.options());
  const float* xp = xc.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  for (std::int64_t m = 0; m < M; m += kSmallGemmMaxRows) {
    const std::int64_t rows = std::min(kSmallGemmMaxRows, M - m);
    if (bf16_w) {
      const auto* wb = reinterpret_cast<const std::uint16_t*>(w.data_ptr<at::BFloat16>());
      SmallGemmBf16W(path, xp + m * K, rows, K, wb, N, yp + m * N, N);
    } else {
      SmallGemmF32(path, xp + m * K, rows, K, w.data_ptr<float>(), N, yp + m * N, N);
    }
  }
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
void Linear::Dequantize(const QuantizedWeight& q, std::int64_t first, const at::Tensor& w) {
  if (!q.data.defined()) return DequantizeRowsInto(q.view, first, w);
  auto part = [&](const at::Tensor& t) { return t.defined() ? t.narrow(0, first, w.size(0)) : t; };
  DequantizeTensors(q, part(q.data), part(q.scales), part(q.zeros), w);
}

void Linear::DequantizeTensors(const QuantizedWeight& q, const at::Tensor& data, const at::Tensor& scales,
                               const at::Tensor& zeros, const at::Tensor& w) {
  const std::int64_t rows = w.size(0);
  const auto& info = q.view.quant();
  const bool int8 = info.scheme == weights::QuantScheme::kInt8PerChannel;
  if (q.fused && (int8 ? fused::DequantizeInt8(w, data, scales)
                       : fused::DequantizeInt4(w, data, scales, zeros, info.group_size)))
    return;
  if (int8) {
    w.copy_(data);
    w.mul_(scales.unsqueeze(1));
    return;
  }
  const std::int64_t pb = data.size(1), group = info.group_size;
  at::Tensor lo = data.bitwise_and(15), hi = data.__rshift__(4);
  if (info.symmetric) {  // two's-complement nibbles: (n ^ 8) - 8
    lo.bitwise_xor_(8);
    hi.bitwise_xor_(8);
  }
  if (q.cols == 2 * pb) {
    at::Tensor pairs = w.view({rows, pb, 2});
    pairs.select(2, 0).copy_(lo);
    pairs.select(2, 1).copy_(hi);
  } else {
    w.copy_(at::stack({lo, hi}, 2).view({rows, 2 * pb}).narrow(1, 0, q.cols));
  }
  if (info.symmetric) w.sub_(8);
  const bool whole_groups = q.cols % group == 0;
  at::Tensor grouped = whole_groups ? w.view({rows, q.cols / group, group}) : w;
  auto per_group = [&](const at::Tensor& t) { return whole_groups ? t.unsqueeze(2) : Grouped(t, group, q.cols); };
  if (!info.symmetric) grouped.sub_(per_group(zeros));
  grouped.mul_(per_group(scales));
}

Linear Linear::Quantized(const weights::TensorView& view, at::ScalarType compute_dtype) {
  Linear l;
  l.quantized_ =
      std::make_shared<QuantizedWeight>(QuantizedWeight{view, DequantDType(compute_dtype), view.rows(), view.cols(), {}, {}, {}});
  return l;
}

Linear Linear::QuantizedTensors(const weights::TensorView& view, at::ScalarType compute_dtype, at::Device device,
                                const std::uint8_t* device_region, bool fused_kernels) {
  auto q = std::make_shared<QuantizedWeight>(
      QuantizedWeight{view, DequantDType(compute_dtype), view.rows(), view.cols(), {}, {}, {}, fused_kernels});
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

// A layer larger than the scratch cap (a quantized LM head) is dequantized and multiplied in
// chunks of output features (weights::DequantChunkRows), each product written into its columns.
at::Tensor Linear::Apply(const at::Tensor& x) const {
  if (!quantized_) return Product(x, weight_);
  const auto& q = *quantized_;
  const at::Tensor xq = x.to(q.dtype);
  const std::int64_t chunk = weights::DequantChunkRows(q.rows, q.cols);
  if (chunk >= q.rows) {
    at::Tensor w = Scratch(q.rows, q.cols, q.dtype, device());
    Dequantize(q, 0, w);
    return Product(xq, w).to(x.scalar_type());
  }
  std::vector<std::int64_t> sizes = x.sizes().vec();
  sizes.back() = q.rows;
  at::Tensor y = at::empty(sizes, xq.options());
  for (std::int64_t first = 0; first < q.rows; first += chunk) {
    const std::int64_t n = std::min(chunk, q.rows - first);
    at::Tensor w = Scratch(n, q.cols, q.dtype, device());
    Dequantize(q, first, w);
    y.narrow(-1, first, n).copy_(Product(xq, w));
  }
  return y.to(x.scalar_type());
}

at::Tensor Linear::Rows(const at::Tensor& ids) const {
  if (!quantized_) return at::embedding(weight_, ids);
  const auto& q = *quantized_;
  const at::Tensor flat = ids.reshape({-1}).to(at::kLong);
  const std::int64_t n = flat.numel();
  std::vector<std::int64_t> sizes = ids.sizes().vec();
  sizes.push_back(q.cols);
  at::Tensor out = at::empty({n, q.cols}, at::TensorOptions().dtype(q.dtype).device(device()));
  if (!q.data.defined()) {  // rows path: each id's row from the segment's bytes
    const at::Tensor host = flat.cpu().contiguous();
    const auto* id = host.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < n; ++i) {
      TORCH_CHECK(id[i] >= 0 && id[i] < q.rows, "embedding: token id ", id[i], " is outside the ", q.rows,
                  " rows of tensor '", q.view.name(), "'");
      DequantizeRowsInto(q.view, id[i], out.narrow(0, i, 1));
    }
    return out.view(sizes);
  }
  // Tensors path: no host-side check (it would wait for the device and break a CUDA graph's
  // capture); index_select checks the ids as at::embedding does on the same device.
  const at::Tensor at_device = flat.to(q.data.device());
  auto gather = [&](const at::Tensor& t) { return t.defined() ? t.index_select(0, at_device) : t; };
  DequantizeTensors(q, gather(q.data), gather(q.scales), gather(q.zeros), out);
  return out.view(sizes);
}

at::Tensor Linear::weight() const {
  if (!quantized_) return weight_;
  at::Tensor w = at::empty({quantized_->rows, quantized_->cols}, at::TensorOptions().dtype(quantized_->dtype).device(device()));
  Dequantize(*quantized_, 0, w);
  return w;
}

std::int64_t Linear::out_features() const { return quantized_ ? quantized_->rows : weight_.size(0); }

}  // namespace unmask::model
