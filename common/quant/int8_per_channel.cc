#include "common/quant/int8_per_channel.h"

#include <algorithm>
#include <cmath>

#include "common/quant/convert.h"
#include "common/quant/quant_common.h"

namespace unmask::weights {

namespace {
constexpr const char* kScheme = "int8_per_channel";

void QuantizeRow(const float* __restrict w, std::int64_t cols, std::int8_t* __restrict q, float* scale) {
  float amax = 0.0f;
  for (std::int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(w[c]));
  const float s = amax / 127.0f;
  *scale = s;
  if (s == 0.0f) {
    std::fill(q, q + cols, std::int8_t{0});
    return;
  }
  // Division (not multiplication by 1/s) keeps |w/s| <= 127 exact at the row maximum.
  for (std::int64_t c = 0; c < cols; ++c) {
    float v = internal::RoundNearestEven(w[c] / s);
    v = std::min(127.0f, std::max(-127.0f, v));
    q[c] = static_cast<std::int8_t>(v);
  }
}

UNMASK_SIMD_CLONES void DequantizeRowF32(const std::int8_t* __restrict q, float s, std::int64_t cols,
                                         float* __restrict out) {
  for (std::int64_t c = 0; c < cols; ++c) out[c] = static_cast<float>(q[c]) * s;
}

UNMASK_SIMD_CLONES void DequantizeRowBf16(const std::int8_t* __restrict q, float s, std::int64_t cols,
                                          std::uint16_t* __restrict out) {
  for (std::int64_t c = 0; c < cols; ++c) out[c] = F32ToBf16(static_cast<float>(q[c]) * s);
}

}  // namespace

Status QuantizeInt8PerChannel(const float* w, std::int64_t rows, std::int64_t cols, std::int8_t* q, float* scales) {
  UNMASK_RETURN_IF_ERROR(internal::CheckShape(kScheme, rows, cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = w + r * cols;
    const std::int64_t bad = internal::FirstNonFinite(row, cols);
    if (bad >= 0) return internal::NonFiniteError(kScheme, r, bad, row[bad]);
    QuantizeRow(row, cols, q + r * cols, scales + r);
  }
  return OkStatus();
}

StatusOr<Int8Quantized> QuantizeInt8PerChannel(const float* w, std::int64_t rows, std::int64_t cols) {
  UNMASK_RETURN_IF_ERROR(internal::CheckShape(kScheme, rows, cols));
  Int8Quantized out;
  out.rows = rows;
  out.cols = cols;
  out.q.resize(Int8DataBytes(rows, cols));
  out.scales.resize(static_cast<std::size_t>(rows));
  UNMASK_RETURN_IF_ERROR(QuantizeInt8PerChannel(w, rows, cols, out.q.data(), out.scales.data()));
  return out;
}

Status DequantizeRows(const Int8Tensor& t, std::int64_t row_begin, std::int64_t row_end, float* out) {
  UNMASK_RETURN_IF_ERROR(internal::CheckRowRange(kScheme, t.rows, row_begin, row_end));
  for (std::int64_t r = row_begin; r < row_end; ++r) {
    DequantizeRowF32(t.q + r * t.cols, t.scales[r], t.cols, out + (r - row_begin) * t.cols);
  }
  return OkStatus();
}

Status DequantizeRowsBf16(const Int8Tensor& t, std::int64_t row_begin, std::int64_t row_end, std::uint16_t* out) {
  UNMASK_RETURN_IF_ERROR(internal::CheckRowRange(kScheme, t.rows, row_begin, row_end));
  for (std::int64_t r = row_begin; r < row_end; ++r) {
    DequantizeRowBf16(t.q + r * t.cols, t.scales[r], t.cols, out + (r - row_begin) * t.cols);
  }
  return OkStatus();
}

}  // namespace unmask::weights
