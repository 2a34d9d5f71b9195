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

}  // namespace unmask::model
