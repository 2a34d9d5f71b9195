// Rows of bf16 values converted, scaled and summed in float32 with the bits ATen's scalar bf16
// arithmetic gives (c10::BFloat16: widening is exact, rounding is to nearest even, NaN becomes
// 0x7FC0), 16 lanes at a time on AVX-512F, 8 on AVX2, one at a time elsewhere. The CPU MoE layer
// (moe_cpu.cc) rounds every expert's products and mixes every row's expert outputs through these:
// one value at a time, those loops took a third as long as the products themselves at bf16.
//
// `path` picks the instructions as for the few-row kernels (cpu_features.h's GemmPath: kAvx512,
// kAvx2, or kBlas for plain C++); a path the CPU cannot run falls back to plain C++. Every path
// gives the same bits: each element's arithmetic is the same float32 operations in the same order
// (a product, then a sum, never fused).
#pragma once

#include <cstdint>

#include "common/model/cpu_features.h"

namespace unmask::model {

// out[i] = bf16(in[i]) for i < n.
void RoundToBf16(GemmPath path, const float* in, std::int64_t n, std::uint16_t* out);

// y[i] = bf16(y[i] + bf16(o[i] * w)) for i < n: one step of a bf16 index_add_ of o * w, with w
// already a bf16 value.
void AddScaledBf16(GemmPath path, std::uint16_t* y, const std::uint16_t* o, float w, std::int64_t n);

// acc[i] = acc[i] + o[i] * w for i < n, in float32 (the product rounded, then the sum).
void AccumulateScaled(GemmPath path, float* acc, const std::uint16_t* o, float w, std::int64_t n);

// RoPE over rows of bf16 (ApplyRotaryRows of layers.h): x is [rows, heads, head_dim], cos and sin
// [rows, head_dim] float32 (one row per x row, shared by its heads). For d < head_dim / 2,
// out = bf16(x[d] * cos[d] - x[d + half] * sin[d]); above, bf16(x[d] * cos[d] + x[d - half] * sin[d]):
// the two products and the sum each rounded in float32, as ATen's composition computes them.
// head_dim even.
void RotateBf16(GemmPath path, const std::uint16_t* x, std::int64_t rows, std::int64_t heads, std::int64_t head_dim,
                const float* cos, const float* sin, std::uint16_t* out);

// RMSNorm's two elementwise passes over rows of bf16 (RmsNorm of layers.h), around the mean that
// ATen keeps computing (its reduction order decides the bits): squares[i] = float(x[i])^2 (exact:
// a bf16 value's square fits float32), then per row r = 1 / sqrt(variance[row] + eps) and
// out[d] = bf16(weight[d] * bf16(x[d] * r)), each product rounded in float32.
void SquaresOfBf16(GemmPath path, const std::uint16_t* x, std::int64_t n, float* squares);
void RmsNormRowsBf16(GemmPath path, const std::uint16_t* x, std::int64_t rows, std::int64_t d, const float* variance,
                     float eps, const std::uint16_t* weight, std::uint16_t* out);

}  // namespace unmask::model
