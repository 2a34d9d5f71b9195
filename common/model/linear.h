// A bias-free linear layer y = x W^T — the seam where quantized weights plug in: callers only
// see Apply().
//
// Dense: W is a tensor in the compute dtype (possibly a zero-copy view into a mapped file or
// shared segment). Quantized (int8 per channel, int4 group-wise): W stays in its packed bytes in
// the shared segment; Apply() dequantizes it into a per-thread scratch buffer that is reused by
// every quantized layer, so only one layer's weights exist at 16/32 bits at any time (of a layer
// above weights::kMaxDequantScratchElements, a quantized LM head, a chunk of its rows at a time:
// each chunk's product fills its output columns). Two ways to dequantize, with the same results
// bit for bit:
//   - rows (CPU): a hand-written loop over the segment's bytes, rows split across threads;
//   - tensors (any device, what CUDA uses): the packed bytes are tensors on the device (views of
//     a CUDA IPC allocation, or a copy of the packed bytes, still 4/8 bits per weight) and a few
//     ATen element-wise operations dequantize one layer into the scratch buffer; on a GPU with
//     ModelOptions::fused_kernels, one kernel does (fused_ops.h).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

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
  // The tensors path on `device`. `device_region`: the segment's data region already in that
  // device's memory (the manifest offsets index it; it must outlive the layer), or null to copy
  // the packed bytes (not a dequantized copy) from `view` to the device. `fused_kernels`: on a
  // GPU, in a build with the fused kernels, each Apply dequantizes in one kernel (fused_ops.h),
  // the same bits.
  static Linear QuantizedTensors(const weights::TensorView& view, at::ScalarType compute_dtype, at::Device device,
                                 const std::uint8_t* device_region = nullptr, bool fused_kernels = false);

  at::Tensor Apply(const at::Tensor& x) const;
  // The rows of W at `ids` (int64, any shape): an embedding lookup, [ids..., in_features]. A
  // quantized table dequantizes only those rows. Throws where an id is outside [0, out_features).
  at::Tensor Rows(const at::Tensor& ids) const;
  // The dense weight; for a quantized layer, a freshly dequantized copy.
  at::Tensor weight() const;
  std::int64_t out_features() const;
  bool quantized() const { return quantized_ != nullptr; }

 private:
  struct QuantizedWeight;
  // Dequantizes rows [first, first + out.size(0)) of the layer into `out` ([n, cols], contiguous,
  // on the layer's device).
  static void Dequantize(const QuantizedWeight& q, std::int64_t first, const at::Tensor& out);
  // The tensors path on the packed tensors of some rows (a range, or gathered rows) into `out`.
  static void DequantizeTensors(const QuantizedWeight& q, const at::Tensor& data, const at::Tensor& scales,
                                const at::Tensor& zeros, const at::Tensor& out);
  at::Device device() const;

  at::Tensor weight_;                                // [out, in], compute dtype
  std::shared_ptr<const QuantizedWeight> quantized_;  // or packed bytes (in a segment, or tensors)
};

}  // namespace unmask::model
