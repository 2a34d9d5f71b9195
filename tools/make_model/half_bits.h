// Float to the 16-bit weight formats make-model writes (shared by the default and fast fills).
#pragma once

#include <cstdint>
#include <cstring>

#include "common/checkpoint/dtype.h"

namespace unmask::tools {

inline std::uint16_t FloatToHalfBits(float f, checkpoint::DType dtype) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (dtype == checkpoint::DType::kBF16) {
    bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest even
    return static_cast<std::uint16_t>(bits >> 16);
  }
  // IEEE half for the small, normal values random init produces (|f| < 65504); tiny values
  // flush to zero, which is harmless for random weights.
  const std::uint32_t sign = (bits >> 16) & 0x8000;
  const int exp = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return static_cast<std::uint16_t>(sign);
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7c00);
  const std::uint32_t mant = bits & 0x7fffff;
  std::uint32_t h = sign | (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  if ((mant & 0x1fff) > 0x1000 || ((mant & 0x1fff) == 0x1000 && (h & 1))) ++h;
  return static_cast<std::uint16_t>(h);
}

}  // namespace unmask::tools
