#include "common/quant/int4_groupwise.h"

#include <algorithm>
#include <cmath>

#include "common/quant/convert.h"
#include "common/quant/quant_common.h"

namespace unmask::weights {

namespace {
constexpr const char* kScheme = "int4_groupwise";
constexpr std::uint16_t kF16Inf = 0x7c00;

// The smallest f16 >= s (s finite and >= 0); kF16Inf when s is above the f16 range.
std::uint16_t RoundUpToF16(float s) {
  std::uint16_t h = F32ToF16(s);
  if (h < kF16Inf && F16ToF32(h) < s) ++h;  // positive f16 bit patterns are ordered like values
  return h;
}

// Quantizes one group of n <= 128 values into q (as the nibble value 0..15); returns the f16
// scale and sets *zero (asymmetric).
Status QuantizeGroup(const float* __restrict w, std::int64_t n, bool symmetric, std::uint8_t* __restrict q,
                     std::uint16_t* scale, std::uint8_t* zero) {
  if (symmetric) {
    float amax = 0.0f;
    for (std::int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(w[i]));
    const std::uint16_t h = RoundUpToF16(amax / 7.0f);
    if (h >= kF16Inf) return InvalidArgumentError("scale " + std::to_string(amax / 7.0f) + " does not fit in f16");
    const float s = F16ToF32(h);
    *scale = h;
    for (std::int64_t i = 0; i < n; ++i) {
      float v = s > 0.0f ? internal::RoundNearestEven(w[i] / s) : 0.0f;
      v = std::min(7.0f, std::max(-8.0f, v));
      q[i] = static_cast<std::uint8_t>(static_cast<int>(v) & 0xf);
    }
    return OkStatus();
  }
  float lo = 0.0f, hi = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, w[i]);
    hi = std::max(hi, w[i]);
  }
  const float range_scale = (hi - lo) / 15.0f;
  const std::uint16_t h = RoundUpToF16(range_scale);
  if (h >= kF16Inf) return InvalidArgumentError("scale " + std::to_string(range_scale) + " does not fit in f16");
  const float s = F16ToF32(h);
  *scale = h;
  const float z = s > 0.0f ? std::min(15.0f, std::max(0.0f, internal::RoundNearestEven(-lo / s))) : 0.0f;
  *zero = static_cast<std::uint8_t>(z);
  for (std::int64_t i = 0; i < n; ++i) {
    float v = s > 0.0f ? internal::RoundNearestEven(w[i] / s) + z : z;
    v = std::min(15.0f, std::max(0.0f, v));
    q[i] = static_cast<std::uint8_t>(v);
  }
  return OkStatus();
}

// Decodes one row group by group; `convert` maps the f32 value to the output type. A nibble
// decodes as `(nibble ^ flip) - offset`: flip 8 / offset 8 sign-extends a two's-complement
// nibble, flip 0 / offset zero applies the zero point. The product of a 4-bit integer and an
// f16 scale is exact in f32, so dequantized values are exact. `zeros` is null when symmetric.
template <typename Out, typename Convert>
[[gnu::always_inline]] inline void DequantizeRowBody(const std::uint8_t* __restrict row,
                                                     const std::uint16_t* __restrict scales,
                                                     const std::uint8_t* __restrict zeros, const Int4Layout& L,
                                                     Out* __restrict o, Convert convert) {
  const std::int64_t groups = L.groups_per_row();
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t c0 = g * L.group_size;
    const std::int64_t n = std::min<std::int64_t>(L.group_size, L.cols - c0);
    const float s = F16ToF32(scales[g]);
    const int flip = zeros == nullptr ? 8 : 0;
    const int offset = zeros == nullptr ? 8 : zeros[g];
    const std::uint8_t* __restrict bytes = row + c0 / 2;
    Out* __restrict og = o + c0;
    const std::int64_t pairs = n / 2;
    for (std::int64_t j = 0; j < pairs; ++j) {
      const int b = bytes[j];
      og[2 * j] = convert(static_cast<float>(((b & 0xf) ^ flip) - offset) * s);
      og[2 * j + 1] = convert(static_cast<float>(((b >> 4) ^ flip) - offset) * s);
    }
    if (n % 2 != 0) og[n - 1] = convert(static_cast<float>(((bytes[pairs] & 0xf) ^ flip) - offset) * s);
  }
}

UNMASK_SIMD_CLONES void DequantizeRowF32(const std::uint8_t* row, const std::uint16_t* scales,
                                         const std::uint8_t* zeros, const Int4Layout& L, float* out) {
  DequantizeRowBody(row, scales, zeros, L, out, [](float v) { return v; });
}

UNMASK_SIMD_CLONES void DequantizeRowBf16(const std::uint8_t* row, const std::uint16_t* scales,
                                          const std::uint8_t* zeros, const Int4Layout& L, std::uint16_t* out) {
  DequantizeRowBody(row, scales, zeros, L, out, [](float v) { return F32ToBf16(v); });
}

template <typename Out, typename RowFn>
Status DequantizeRowsImpl(const Int4Tensor& t, std::int64_t row_begin, std::int64_t row_end, Out* out, RowFn row_fn) {
  const Int4Layout& L = t.layout;
  UNMASK_RETURN_IF_ERROR(L.Validate());
  UNMASK_RETURN_IF_ERROR(internal::CheckRowRange(kScheme, L.rows, row_begin, row_end));
  if (!L.symmetric && t.zeros == nullptr)
    return InvalidArgumentError(std::string(kScheme) + ": asymmetric weight without zeros");
  const std::int64_t groups = L.groups_per_row();
  for (std::int64_t r = row_begin; r < row_end; ++r) {
    row_fn(t.packed + r * L.packed_row_bytes(), t.scales + r * groups, L.symmetric ? nullptr : t.zeros + r * groups, L,
           out + (r - row_begin) * L.cols);
  }
  return OkStatus();
}

}  // namespace

bool IsValidInt4GroupSize(int group_size) { return group_size == 32 || group_size == 64 || group_size == 128; }

Status Int4Layout::Validate() const {
  UNMASK_RETURN_IF_ERROR(internal::CheckShape(kScheme, rows, cols));
  if (!IsValidInt4GroupSize(group_size)) {
    return InvalidArgumentError(std::string(kScheme) + ": group size " + std::to_string(group_size) +
                                " is not one of 32, 64, 128");
  }
  return OkStatus();
}

Status QuantizeInt4Groupwise(const float* w, const Int4Layout& layout, std::uint8_t* packed, std::uint16_t* scales,
                             std::uint8_t* zeros) {
  UNMASK_RETURN_IF_ERROR(layout.Validate());
  if (!layout.symmetric && zeros == nullptr)
    return InvalidArgumentError(std::string(kScheme) + ": zeros buffer is null");
  const std::int64_t groups = layout.groups_per_row();
  const std::int64_t row_bytes = layout.packed_row_bytes();
  std::uint8_t q[128];
  for (std::int64_t r = 0; r < layout.rows; ++r) {
    const float* row = w + r * layout.cols;
    const std::int64_t bad = internal::FirstNonFinite(row, layout.cols);
    if (bad >= 0) return internal::NonFiniteError(kScheme, r, bad, row[bad]);
    std::uint8_t* out = packed + r * row_bytes;
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t c0 = g * layout.group_size;
      const std::int64_t n = std::min<std::int64_t>(layout.group_size, layout.cols - c0);
      std::uint8_t zero = 0;
      Status s = QuantizeGroup(row + c0, n, layout.symmetric, q, &scales[r * groups + g], &zero);
      if (!s.ok()) {
        return s.WithContext(std::string(kScheme) + ": row " + std::to_string(r) + ", group " + std::to_string(g));
      }
      if (!layout.symmetric) zeros[r * groups + g] = zero;
      // Group starts are even (group sizes are even), so each group owns whole bytes.
      for (std::int64_t j = 0; j + 1 < n; j += 2) out[(c0 + j) / 2] = static_cast<std::uint8_t>(q[j] | (q[j + 1] << 4));
      if (n % 2 != 0) out[(c0 + n - 1) / 2] = q[n - 1];
    }
  }
  return OkStatus();
}

StatusOr<Int4Quantized> QuantizeInt4Groupwise(const float* w, std::int64_t rows, std::int64_t cols, int group_size,
                                              bool symmetric) {
  Int4Quantized out;
  out.layout = {rows, cols, group_size, symmetric};
  UNMASK_RETURN_IF_ERROR(out.layout.Validate());
  out.packed.resize(out.layout.packed_bytes());
  out.scales.resize(out.layout.scale_bytes() / 2);
  out.zeros.resize(out.layout.zero_bytes());
  UNMASK_RETURN_IF_ERROR(QuantizeInt4Groupwise(w, out.layout, out.packed.data(), out.scales.data(),
                                               symmetric ? nullptr : out.zeros.data()));
  return out;
}

Status DequantizeRows(const Int4Tensor& t, std::int64_t row_begin, std::int64_t row_end, float* out) {
  return DequantizeRowsImpl(t, row_begin, row_end, out, DequantizeRowF32);
}

Status DequantizeRowsBf16(const Int4Tensor& t, std::int64_t row_begin, std::int64_t row_end, std::uint16_t* out) {
  return DequantizeRowsImpl(t, row_begin, row_end, out, DequantizeRowBf16);
}

}  // namespace unmask::weights
