// Weight-only int4 quantization with one scale (and, asymmetric, one zero point) per group of
// `group_size` consecutive input columns of a row.
//
// Storage of the manifest scheme "int4_groupwise" for a weight of logical shape [rows, cols]:
//   packed  uint8 [rows, ceil(cols / 2)], row-major. Column c of a row lives in byte c / 2:
//           even c in the low nibble, odd c in the high nibble (an odd last column leaves the
//           high nibble 0).
//   groups  each row is cut into ceil(cols / group_size) groups of group_size columns; the last
//           group is shorter when group_size does not divide cols. group_size is 32, 64 or 128.
//   scales  f16 [rows, groups_per_row]
//   zeros   uint8 [rows, groups_per_row], asymmetric only, values in [0, 15]
// Symmetric: the nibble is a two's-complement q in [-8, 7], w ~= q * scale, with
//   scale = max|w| / 7 (rounded up to f16), so q spans [-7, 7]: the grid is symmetric around 0
//   and the group maximum is representable; -8 is never produced but dequantizes correctly.
// Asymmetric: the nibble is an unsigned q in [0, 15], w ~= (q - zero) * scale, with
//   scale = (hi - lo) / 15 (rounded up to f16), lo = min(min w, 0), hi = max(max w, 0),
//   zero = round(-lo / scale). Keeping 0 inside the range makes the zero point an integer in
//   [0, 15] and makes exact zeros (pruned weights) dequantize to exactly 0.
// Contract: |w - dequantized w| <= scale / 2 for every element (plus f32 rounding), where scale
// is the stored f16 scale. Rounding the scale *up* to f16 is what keeps the bound: the grid
// then always covers the group's range.
// Why f16 scales and uint8 zeros: with g32 the metadata is 2 (+1) bytes per 16 bytes of
// nibbles, which keeps int4 at <= 0.3x the bf16 bytes even asymmetric (19/64); f32 scales and
// zeros would cost 24/64. f16's 11-bit precision is far below the 4-bit quantization error.
#pragma once

#include <cstdint>
#include <vector>

#include "common/checkpoint/dtype.h"
#include "common/util/status.h"

namespace unmask::weights {

inline constexpr checkpoint::DType kInt4ScaleDType = checkpoint::DType::kF16;
inline constexpr checkpoint::DType kInt4ZeroDType = checkpoint::DType::kU8;

// True for the supported group sizes (32, 64, 128).
bool IsValidInt4GroupSize(int group_size);

struct Int4Layout {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  int group_size = 128;
  bool symmetric = true;

  std::int64_t packed_row_bytes() const { return (cols + 1) / 2; }
  std::int64_t groups_per_row() const { return (cols + group_size - 1) / group_size; }
  std::uint64_t packed_bytes() const { return static_cast<std::uint64_t>(rows * packed_row_bytes()); }
  std::uint64_t scale_bytes() const { return static_cast<std::uint64_t>(rows * groups_per_row()) * 2; }
  std::uint64_t zero_bytes() const { return symmetric ? 0 : static_cast<std::uint64_t>(rows * groups_per_row()); }
  // InvalidArgument for a bad shape or group size.
  Status Validate() const;
};

// A non-owning view of an int4 weight. `zeros` is null when symmetric.
struct Int4Tensor {
  const std::uint8_t* packed = nullptr;
  const std::uint16_t* scales = nullptr;  // f16 bit patterns
  const std::uint8_t* zeros = nullptr;
  Int4Layout layout;
};

struct Int4Quantized {
  Int4Layout layout;
  std::vector<std::uint8_t> packed;
  std::vector<std::uint16_t> scales;
  std::vector<std::uint8_t> zeros;  // empty when symmetric
  Int4Tensor view() const { return {packed.data(), scales.data(), layout.symmetric ? nullptr : zeros.data(), layout}; }
};

// Quantizes w ([layout.rows, layout.cols] f32, row-major) into caller buffers of
// layout.packed_bytes(), scale_bytes() and zero_bytes() (zeros may be null when symmetric).
// Rows are independent: a large weight may be quantized in row chunks by offsetting the
// pointers by whole rows. InvalidArgument naming row and column for a non-finite w, or naming
// the group whose scale does not fit in f16.
Status QuantizeInt4Groupwise(const float* w, const Int4Layout& layout, std::uint8_t* packed, std::uint16_t* scales,
                             std::uint8_t* zeros);
StatusOr<Int4Quantized> QuantizeInt4Groupwise(const float* w, std::int64_t rows, std::int64_t cols, int group_size,
                                              bool symmetric);

// Writes rows [row_begin, row_end) of the dequantized weight, row-major, into `out`
// ((row_end - row_begin) * cols elements).
Status DequantizeRows(const Int4Tensor& t, std::int64_t row_begin, std::int64_t row_end, float* out);
Status DequantizeRowsBf16(const Int4Tensor& t, std::int64_t row_begin, std::int64_t row_end, std::uint16_t* out);

}  // namespace unmask::weights
