// Element conversions between the floating-point formats of checkpoints and segments, on raw
// buffers (bit patterns as uint16_t), without LibTorch.
//
// Contracts:
//  - f32 -> bf16 and f32 -> f16 round to nearest, ties to even (what torch's .to() does).
//  - NaN stays NaN (quiet, sign kept); +-Inf stays +-Inf; f32 values too large for f16 become
//    +-Inf; values below the f16 normal range become f16 subnormals (or +-0), correctly rounded.
//  - bf16 -> f32 and f16 -> f32 are exact.
// The buffer loops are branch-free per element so that the compiler vectorizes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/checkpoint/dtype.h"
#include "common/util/status.h"

namespace unmask::weights {

inline std::uint32_t FloatBits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline float BitsToFloat(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline float Bf16ToF32(std::uint16_t h) { return BitsToFloat(static_cast<std::uint32_t>(h) << 16); }

inline std::uint16_t F32ToBf16(float f) {
  const std::uint32_t u = FloatBits(f);
  const bool is_nan = (u & 0x7fffffffu) > 0x7f800000u;
  // Adding 0x7fff plus the lowest kept bit rounds to nearest-even; the carry may roll into the
  // exponent, which is exactly right (up to +-Inf for values above bf16's largest finite).
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (u >> 16) | 0x0040u;
  return static_cast<std::uint16_t>(is_nan ? quiet_nan : rounded);
}

inline float F16ToF32(std::uint16_t h) {
  // Move exponent and mantissa into f32 position and rebias; subnormals are renormalized by a
  // float subtraction, Inf/NaN get the maximal exponent.
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t em = static_cast<std::uint32_t>(h & 0x7fffu) << 13;
  const std::uint32_t exp = em & 0x0f800000u;
  const std::uint32_t normal = em + ((127u - 15u) << 23);
  const std::uint32_t infnan = em + ((255u - 31u) << 23);
  const float sub = BitsToFloat(em + (113u << 23)) - BitsToFloat(113u << 23);
  std::uint32_t out = exp == 0x0f800000u ? infnan : normal;
  out = exp == 0 ? FloatBits(sub) : out;
  return BitsToFloat(out | sign);
}

inline std::uint16_t F32ToF16(float f) {
  std::uint32_t u = FloatBits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  // >= 65520 rounds to Inf; NaN -> quiet NaN.
  const std::uint32_t big = u > 0x7f800000u ? 0x7e00u : 0x7c00u;
  // Below 2^-14 (f16 normal minimum): adding 0.5 aligns the mantissa so that the float adder's
  // own round-to-nearest-even produces the subnormal bits.
  constexpr std::uint32_t kDenormMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  const std::uint32_t sub = FloatBits(BitsToFloat(u) + BitsToFloat(kDenormMagic)) - kDenormMagic;
  // Normal range: rebias, then round to nearest-even on the 13 dropped bits.
  const std::uint32_t odd = (u >> 13) & 1u;
  const std::uint32_t normal = (u + ((15u - 127u) << 23) + 0xfffu + odd) >> 13;
  std::uint32_t out = u >= (143u << 23) ? big : normal;  // 143 = 127 + 16: 2^16
  out = u < (113u << 23) ? sub : out;                    // 113 = 127 - 14: 2^-14
  return static_cast<std::uint16_t>(out | sign);
}

// Buffer versions; src and dst must not overlap.
void Bf16ToF32(const std::uint16_t* src, float* dst, std::size_t n);
void F32ToBf16(const float* src, std::uint16_t* dst, std::size_t n);
void F16ToF32(const std::uint16_t* src, float* dst, std::size_t n);
void F32ToF16(const float* src, std::uint16_t* dst, std::size_t n);

// True for the element types a weight can be stored as without quantization.
bool IsFloatDType(checkpoint::DType dtype);

// Converts `n` elements between any two of F32, BF16, F16 (a copy when they are equal).
// Unsupported dtypes give InvalidArgument naming them.
Status ConvertFloats(const void* src, checkpoint::DType src_dtype, void* dst, checkpoint::DType dst_dtype,
                     std::size_t n);

// Reads `n` elements of a F32/BF16/F16 buffer as f32.
Status ToF32(const void* src, checkpoint::DType src_dtype, float* dst, std::size_t n);

}  // namespace unmask::weights
