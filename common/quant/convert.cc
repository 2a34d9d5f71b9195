#include "common/quant/convert.h"

#include "common/quant/quant_common.h"

namespace unmask::weights {

using checkpoint::DType;

UNMASK_SIMD_CLONES void Bf16ToF32(const std::uint16_t* __restrict src, float* __restrict dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = Bf16ToF32(src[i]);
}

UNMASK_SIMD_CLONES void F32ToBf16(const float* __restrict src, std::uint16_t* __restrict dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = F32ToBf16(src[i]);
}

UNMASK_SIMD_CLONES void F16ToF32(const std::uint16_t* __restrict src, float* __restrict dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = F16ToF32(src[i]);
}

UNMASK_SIMD_CLONES void F32ToF16(const float* __restrict src, std::uint16_t* __restrict dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = F32ToF16(src[i]);
}

bool IsFloatDType(DType dtype) { return dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16; }

Status ToF32(const void* src, DType src_dtype, float* dst, std::size_t n) {
  switch (src_dtype) {
    case DType::kF32:
      std::memcpy(dst, src, n * sizeof(float));
      return OkStatus();
    case DType::kBF16:
      Bf16ToF32(static_cast<const std::uint16_t*>(src), dst, n);
      return OkStatus();
    case DType::kF16:
      F16ToF32(static_cast<const std::uint16_t*>(src), dst, n);
      return OkStatus();
    default:
      return InvalidArgumentError(std::string("cannot read dtype ") + checkpoint::DTypeName(src_dtype) +
                                  " as floating point");
  }
}

Status ConvertFloats(const void* src, DType src_dtype, void* dst, DType dst_dtype, std::size_t n) {
  if (!IsFloatDType(src_dtype) || !IsFloatDType(dst_dtype)) {
    return InvalidArgumentError(std::string("unsupported conversion ") + checkpoint::DTypeName(src_dtype) + " -> " +
                                checkpoint::DTypeName(dst_dtype));
  }
  if (src_dtype == dst_dtype) {
    std::memcpy(dst, src, n * checkpoint::DTypeSize(src_dtype));
    return OkStatus();
  }
  if (dst_dtype == DType::kF32) return ToF32(src, src_dtype, static_cast<float*>(dst), n);
  auto* out = static_cast<std::uint16_t*>(dst);
  if (src_dtype == DType::kF32) {
    const auto* in = static_cast<const float*>(src);
    if (dst_dtype == DType::kBF16) {
      F32ToBf16(in, out, n);
    } else {
      F32ToF16(in, out, n);
    }
    return OkStatus();
  }
  // BF16 <-> F16 goes through f32 in blocks that stay in L1; both steps round once, and the
  // f32 step is exact, so the result is the correctly rounded value.
  constexpr std::size_t kBlock = 2048;
  float block[kBlock];
  const auto* in = static_cast<const std::uint16_t*>(src);
  for (std::size_t begin = 0; begin < n; begin += kBlock) {
    const std::size_t count = n - begin < kBlock ? n - begin : kBlock;
    if (src_dtype == DType::kBF16) {
      Bf16ToF32(in + begin, block, count);
      F32ToF16(block, out + begin, count);
    } else {
      F16ToF32(in + begin, block, count);
      F32ToBf16(block, out + begin, count);
    }
  }
  return OkStatus();
}

}  // namespace unmask::weights
