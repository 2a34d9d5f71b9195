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

}  // namespace unmask::model::fused
