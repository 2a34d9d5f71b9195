// Weight-only int8 quantization with one symmetric scale per output row ("per channel").
//
// Storage of the manifest scheme "int8_per_channel" for a weight of logical shape [rows, cols]:
//   q       int8 [rows, cols], row-major, values in [-127, 127]
//   scales  f32  [rows]
//   w[r][c] ~= q[r][c] * scales[r]
// scales[r] = max_c |w[r][c]| / 127 (0 for an all-zero row, whose q are 0) and
// q = round-half-even(w / scale). Contract: |w - q * scale| <= scale / 2 (plus f32 rounding).
// f32 scales: one per row costs 4 bytes per `cols` weights (0.1% at cols = 4096), so there is
// nothing to gain from f16 and f32 keeps the bound exact.
#pragma once

#include <cstdint>
#include <vector>

#include "common/checkpoint/dtype.h"
#include "common/util/status.h"

namespace unmask::weights {

inline constexpr checkpoint::DType kInt8ScaleDType = checkpoint::DType::kF32;

// A non-owning view of an int8 weight (in a segment or in an Int8Quantized).
struct Int8Tensor {
  const std::int8_t* q = nullptr;
  const float* scales = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};

struct Int8Quantized {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::int8_t> q;
  std::vector<float> scales;
  Int8Tensor view() const { return {q.data(), scales.data(), rows, cols}; }
};

inline std::uint64_t Int8DataBytes(std::int64_t rows, std::int64_t cols) {
  return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols);
}
inline std::uint64_t Int8ScaleBytes(std::int64_t rows) { return static_cast<std::uint64_t>(rows) * 4; }

// Quantizes w ([rows, cols] f32, row-major) into caller buffers q (rows * cols) and
// scales (rows). Rows are independent, so a caller may quantize a large weight in row chunks
// by offsetting all three pointers. InvalidArgument naming row and column for a non-finite w.
Status QuantizeInt8PerChannel(const float* w, std::int64_t rows, std::int64_t cols, std::int8_t* q, float* scales);
StatusOr<Int8Quantized> QuantizeInt8PerChannel(const float* w, std::int64_t rows, std::int64_t cols);

// Writes rows [row_begin, row_end) of the dequantized weight, row-major, into `out`
// ((row_end - row_begin) * cols elements): the on-the-fly path of a quantized linear layer.
Status DequantizeRows(const Int8Tensor& t, std::int64_t row_begin, std::int64_t row_end, float* out);
// Same, rounded to bf16 (round-to-nearest-even), for bf16 matmuls.
Status DequantizeRowsBf16(const Int8Tensor& t, std::int64_t row_begin, std::int64_t row_end, std::uint16_t* out);

}  // namespace unmask::weights
