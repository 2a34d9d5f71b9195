// A tensor inside a segment's data region, as described by its manifest entry, and the
// row-range dequantization a linear layer runs on the fly into a reused scratch buffer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/checkpoint/dtype.h"
#include "common/util/status.h"
#include "common/quant/int4_groupwise.h"
#include "common/quant/int8_per_channel.h"
#include "common/segment/manifest.h"

namespace unmask::weights {

struct TensorView {
  const TensorEntry* entry = nullptr;  // owned by the manifest the view came from
  const std::uint8_t* data = nullptr;
  const std::uint8_t* scales = nullptr;  // quantized tensors
  const std::uint8_t* zeros = nullptr;   // asymmetric int4

  const std::string& name() const { return entry->name; }
  checkpoint::DType dtype() const { return entry->dtype; }
  const std::vector<std::int64_t>& shape() const { return entry->shape; }
  const QuantInfo& quant() const { return entry->quant; }
  std::int64_t rows() const { return entry->rows(); }
  std::int64_t cols() const { return entry->cols(); }

  // Typed views of quantized weights; InvalidArgument naming the tensor for another scheme.
  StatusOr<Int8Tensor> AsInt8() const;
  StatusOr<Int4Tensor> AsInt4() const;
};

// The view of `entry` in the data region starting at `data_region`.
TensorView MakeTensorView(const TensorEntry& entry, const std::uint8_t* data_region);

// Rows [row_begin, row_end) of any stored weight (F32, BF16, F16, int8, int4), row-major, as
// f32 or bf16, into `out` ((row_end - row_begin) * cols elements).
Status DequantizeRows(const TensorView& t, std::int64_t row_begin, std::int64_t row_end, float* out);
Status DequantizeRowsBf16(const TensorView& t, std::int64_t row_begin, std::int64_t row_end, std::uint16_t* out);

}  // namespace unmask::weights
