// A layer's elementwise parts as one CUDA kernel each where ATen launches several (a cached
// 32-row step on an H100 was half small kernels: docs/benchmarks.md), computing the same bits as
// the ATen composition in layers.cc (fused_kernels.h). ModelOptions::fused_kernels turns them on.
// Each function answers an undefined tensor where it does not apply (this build has no CUDA
// kernels, or the tensors are not contiguous bf16 on a GPU): the caller then composes ATen ops.
#pragma once

#include <ATen/core/Tensor.h>

namespace unmask::model::fused {

// Whether this build has the kernels (a LibTorch with CUDA and nvcc: UNMASK_CUDA_KERNELS).
bool Available();

// RmsNorm(x, weight, eps) of layers.h; x [..., d], weight [d]. The mean stays ATen's (its
// reduction order decides the bits); the square before it and the rest after it are one kernel each.
at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps);
// ApplyRotaryRows(x, cos, sin) of layers.h; x [rows, heads, head_dim], cos and sin
// [rows, 1, head_dim] float.
at::Tensor Rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
// at::silu(gate) * up; gate and up of one shape.
at::Tensor SiluMul(const at::Tensor& gate, const at::Tensor& up);

// A quantized layer's dequantization of linear.cc's tensors path as one kernel, into out
// ([rows, cols], contiguous bf16 or float32, on the GPU of the packed tensors), the same bits.
// Each answers false where it does not apply; out is then untouched.
// int8 per channel: q [rows, cols] int8, scales [rows] float32.
bool DequantizeInt8(const at::Tensor& out, const at::Tensor& q, const at::Tensor& scales);
// int4 group-wise: packed [rows, ceil(cols / 2)] uint8, scales [rows, groups] f16, zeros
// [rows, groups] uint8 or undefined (symmetric), groups = ceil(cols / group); group even.
bool DequantizeInt4(const at::Tensor& out, const at::Tensor& packed, const at::Tensor& scales,
                    const at::Tensor& zeros, std::int64_t group);

}  // namespace unmask::model::fused
