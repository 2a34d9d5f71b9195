// The CUDA kernels behind fused_ops.h, on raw device pointers (bf16 as its 16 bits) and the
// stream they run on; compiled by nvcc only where the build has CUDA (UNMASK_CUDA_KERNELS).
// Each computes exactly the float operations, in the order and with the rounding, of the ATen
// composition it replaces (layers.cc), so its output is the same bits.
#pragma once

#include <cstdint>

#include "common/model/dequant_element.h"

namespace unmask::model::fused_kernels {

using Bf16Bits = std::uint16_t;

// out[i] = float(x[i])^2 (ATen's pow(2) of the float copy).
void Square(float* out, const Bf16Bits* x, std::int64_t n, void* stream);
// out[r, j] = bf16(float(w[j]) * float(bf16(float(x[r, j]) * rsqrtf(var[r] + eps)))).
void RmsNormTail(Bf16Bits* out, const Bf16Bits* x, const float* var, const Bf16Bits* w, float eps, std::int64_t rows,
                 std::int64_t d, void* stream);
// x, out [rows, heads, hd]; cos, sin [rows, hd] float. With t = float(x), r = rotate_half(t):
// out = bf16(t * cos + r * sin), each product and the sum rounded to float.
void Rotary(Bf16Bits* out, const Bf16Bits* x, const float* cos, const float* sin, std::int64_t rows,
            std::int64_t heads, std::int64_t hd, void* stream);
// out = bf16(float(bf16(silu(float(gate)))) * float(up)), silu(v) = v / (1 + exp(-v)).
void SiluMul(Bf16Bits* out, const Bf16Bits* gate, const Bf16Bits* up, std::int64_t n, void* stream);
// A quantized layer's [rows, cols] values into out (bf16 bits, or float32 where out_float), each
// element as dequant_element.h computes it: one read of the packed bytes, one write of the values.
void DequantizeInt8(void* out, bool out_float, const dequant::Int8Layout& layout, std::int64_t rows, void* stream);
void DequantizeInt4(void* out, bool out_float, const dequant::Int4Layout& layout, std::int64_t rows, void* stream);

}  // namespace unmask::model::fused_kernels
