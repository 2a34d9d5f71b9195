// One quantized weight's values, computed the same way on the host and in a CUDA kernel
// (fused_kernels.cu includes this under nvcc): the CPU tests run these very functions against the
// ATen dequantization of linear.cc, so the kernel's arithmetic and indexing are tested on machines
// without a GPU. Layouts are those of Linear's tensors path (linear.cc), values as ATen computes
// them there: float(q) * scale in float32, rounded once to the output type.
//   int8 per channel: q [rows, cols] int8, scales [rows] float32.
//   int4 group-wise: packed [rows, ceil(cols / 2)] bytes (column 2p in the low nibble of byte p,
//     2p + 1 in the high one), scales [rows, groups] f16 bits, zeros [rows, groups] (asymmetric;
//     null when symmetric: two's-complement nibbles).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define UNMASK_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define UNMASK_HOST_DEVICE inline
#endif

namespace unmask::model::dequant {

struct Int8Layout {
  const std::int8_t* q;
  const float* scales;
  std::int64_t cols;
};

struct Int4Layout {
  const std::uint8_t* packed;
  const std::uint16_t* scales;
  const std::uint8_t* zeros;  // null: symmetric
  std::int64_t cols, packed_cols, group, groups;
};

UNMASK_HOST_DEVICE float FloatFromBits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// f16 bits to float32, exactly (a scale is finite: no Inf/NaN handling needed, but kept right).
UNMASK_HOST_DEVICE float HalfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float32
    const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign != 0 ? -v : v;
  }
  const std::uint32_t e = exp == 31 ? 255u : exp + 112u;
  return FloatFromBits(sign | (e << 23) | (mant << 13));
}

// float32 to bf16 bits, to nearest even; NaN becomes 0x7FC0 (c10::BFloat16's rounding).
UNMASK_HOST_DEVICE std::uint16_t RoundToBf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if (f != f) return 0x7FC0u;
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

UNMASK_HOST_DEVICE void Store(float v, float* out) { *out = v; }
UNMASK_HOST_DEVICE void Store(float v, std::uint16_t* out) { *out = RoundToBf16(v); }

// out_row[c] for column c of row r.
template <typename Out>
UNMASK_HOST_DEVICE void Int8Element(const Int8Layout& l, std::int64_t r, std::int64_t c, Out* out_row) {
  Store(static_cast<float>(l.q[r * l.cols + c]) * l.scales[r], out_row + c);
}

// out_row[2p] and out_row[2p + 1] (where it exists) from byte p of row r. Groups are 32, 64 or
// 128 columns (IsValidInt4GroupSize), so a byte's two columns share one: one division a byte, in
// 32 bits (a row has fewer than 2^31 columns).
template <typename Out>
UNMASK_HOST_DEVICE void Int4Byte(const Int4Layout& l, std::int64_t r, std::int64_t p, Out* out_row) {
  const unsigned byte = l.packed[r * l.packed_cols + p];
  const std::int64_t g = r * l.groups + static_cast<std::uint32_t>(2 * p) / static_cast<std::uint32_t>(l.group);
  const float scale = HalfToFloat(l.scales[g]);
  const int zero = l.zeros == nullptr ? 8 : l.zeros[g];
  const unsigned flip = l.zeros == nullptr ? 8u : 0u;  // two's complement: (n ^ 8) - 8
  Store(static_cast<float>(static_cast<int>((byte & 15u) ^ flip) - zero) * scale, out_row + 2 * p);
  if (2 * p + 1 < l.cols) Store(static_cast<float>(static_cast<int>((byte >> 4) ^ flip) - zero) * scale, out_row + 2 * p + 1);
}

}  // namespace unmask::model::dequant
