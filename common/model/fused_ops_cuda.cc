// fused_ops.h where the build has CUDA kernels: checks what applies and launches fused_kernels.cu
// on the current stream (so a CUDA graph being captured records them like any ATen kernel).
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "common/model/fused_kernels.h"
#include "common/model/fused_ops.h"

namespace unmask::model::fused {
namespace {

namespace k = fused_kernels;

bool Bf16OnGpu(const at::Tensor& t) {
  return t.defined() && t.is_cuda() && t.scalar_type() == at::kBFloat16 && t.is_contiguous();
}

bool FloatOnGpu(const at::Tensor& t) {
  return t.defined() && t.is_cuda() && t.scalar_type() == at::kFloat && t.is_contiguous();
}

// A contiguous tensor of this dtype and shape on `device`.
bool OnGpu(const at::Tensor& t, at::ScalarType dtype, at::IntArrayRef shape, const at::Device& device) {
  return t.defined() && t.device() == device && t.scalar_type() == dtype && t.is_contiguous() && t.sizes() == shape;
}

// out of a dequantization: [rows, cols] bf16 or float32 on the packed tensors' GPU.
bool DequantOut(const at::Tensor& out, const at::Tensor& packed) {
  return packed.defined() && packed.is_cuda() && packed.dim() == 2 && out.defined() && out.device() == packed.device() &&
         out.dim() == 2 && out.size(0) == packed.size(0) && out.is_contiguous() &&
         (out.scalar_type() == at::kBFloat16 || out.scalar_type() == at::kFloat) && out.numel() > 0;
}

k::Bf16Bits* Bits(const at::Tensor& t) { return static_cast<k::Bf16Bits*>(t.data_ptr()); }

void* Stream(const at::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

}  // namespace

bool Available() { return true; }

at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (!Bf16OnGpu(x) || !Bf16OnGpu(weight) || x.dim() < 1 || weight.numel() != x.size(-1) ||
      weight.device() != x.device() || x.numel() == 0)
    return {};
  const c10::cuda::CUDAGuard guard(x.device());
  const std::int64_t d = x.size(-1), rows = x.numel() / d;
  at::Tensor squares = at::empty(x.sizes(), x.options().dtype(at::kFloat));
  k::Square(squares.data_ptr<float>(), Bits(x), x.numel(), Stream(x));
  const at::Tensor variance = squares.mean(-1, /*keepdim=*/true).contiguous();
  at::Tensor out = at::empty_like(x);
  k::RmsNormTail(Bits(out), Bits(x), variance.data_ptr<float>(), Bits(weight), static_cast<float>(eps), rows, d,
                 Stream(x));
  return out;
}

at::Tensor Rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  if (!Bf16OnGpu(x) || !FloatOnGpu(cos) || !FloatOnGpu(sin) || x.dim() != 3 || x.size(-1) % 2 != 0 ||
      cos.numel() != x.size(0) * x.size(2) || sin.numel() != cos.numel() || cos.device() != x.device() ||
      x.numel() == 0)
    return {};
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor out = at::empty_like(x);
  k::Rotary(Bits(out), Bits(x), cos.data_ptr<float>(), sin.data_ptr<float>(), x.size(0), x.size(1), x.size(2),
            Stream(x));
  return out;
}

at::Tensor SiluMul(const at::Tensor& gate, const at::Tensor& up) {
  if (!Bf16OnGpu(gate) || !Bf16OnGpu(up) || gate.sizes() != up.sizes() || gate.device() != up.device() ||
      gate.numel() == 0)
    return {};
  const c10::cuda::CUDAGuard guard(gate.device());
  at::Tensor out = at::empty_like(gate);
  k::SiluMul(Bits(out), Bits(gate), Bits(up), gate.numel(), Stream(gate));
  return out;
}

bool DequantizeInt8(const at::Tensor& out, const at::Tensor& q, const at::Tensor& scales) {
  if (!DequantOut(out, q) || !OnGpu(q, at::kChar, out.sizes(), out.device()) ||
      !OnGpu(scales, at::kFloat, {out.size(0)}, out.device()))
    return false;
  const c10::cuda::CUDAGuard guard(out.device());
  const dequant::Int8Layout layout{q.data_ptr<std::int8_t>(), scales.data_ptr<float>(), out.size(1)};
  k::DequantizeInt8(out.data_ptr(), out.scalar_type() == at::kFloat, layout, out.size(0), Stream(out));
  return true;
}

bool DequantizeInt4(const at::Tensor& out, const at::Tensor& packed, const at::Tensor& scales,
                    const at::Tensor& zeros, std::int64_t group) {
  if (!DequantOut(out, packed) || group <= 0 || group % 2 != 0) return false;  // dequant_element.h: even groups
  const std::int64_t rows = out.size(0), cols = out.size(1), groups = (cols + group - 1) / group;
  if (!OnGpu(packed, at::kByte, {rows, (cols + 1) / 2}, out.device()) ||
      !OnGpu(scales, at::kHalf, {rows, groups}, out.device()) ||
      (zeros.defined() && !OnGpu(zeros, at::kByte, {rows, groups}, out.device())))
    return false;
  const c10::cuda::CUDAGuard guard(out.device());
  const dequant::Int4Layout layout{packed.data_ptr<std::uint8_t>(),
                                   static_cast<const std::uint16_t*>(scales.data_ptr()),
                                   zeros.defined() ? zeros.data_ptr<std::uint8_t>() : nullptr,
                                   cols,
                                   packed.size(1),
                                   group,
                                   groups};
  k::DequantizeInt4(out.data_ptr(), out.scalar_type() == at::kFloat, layout, rows, Stream(out));
  return true;
}

}  // namespace unmask::model::fused
