#include "common/registry/tensor_store.h"

#include <algorithm>

#include "common/quant/convert.h"
#include "common/quant/int4_groupwise.h"
#include "common/quant/int8_per_channel.h"
#include "common/quant/pruning.h"

namespace unmask::weights {

using checkpoint::DType;

namespace {

// Stores rows [r0, r0 + n_rows) of the tensor, given as f32 in w, into its regions.
Status StoreF32Rows(const TensorEntry& e, const float* w, std::int64_t r0, std::int64_t n_rows, std::uint8_t* data) {
  const std::int64_t cols = e.cols();
  const std::int64_t first = r0 * cols;
  Status s;
  switch (e.quant.scheme) {
    case QuantScheme::kNone:
      return ConvertFloats(w, DType::kF32, data + e.offset + first * checkpoint::DTypeSize(e.dtype), e.dtype,
                           static_cast<std::size_t>(n_rows * cols));
    case QuantScheme::kInt8PerChannel:
      s = QuantizeInt8PerChannel(w, n_rows, cols, reinterpret_cast<std::int8_t*>(data + e.offset) + first,
                                 reinterpret_cast<float*>(data + e.quant.scales_offset) + r0);
      break;
    case QuantScheme::kInt4Groupwise: {
      const Int4Layout chunk{n_rows, cols, e.quant.group_size, e.quant.symmetric};
      const std::int64_t groups = chunk.groups_per_row();
      s = QuantizeInt4Groupwise(w, chunk, data + e.offset + r0 * chunk.packed_row_bytes(),
                                reinterpret_cast<std::uint16_t*>(data + e.quant.scales_offset) + r0 * groups,
                                e.quant.symmetric ? nullptr : data + e.quant.zeros_offset + r0 * groups);
      break;
    }
  }
  // Row numbers in quantizer errors count from the start of the chunk.
  return s.ok() ? s : s.WithContext("chunk starting at row " + std::to_string(r0));
}

}  // namespace

Status TensorWriter::Write(const TensorEntry& e, const std::uint8_t* src, std::uint8_t* data, const SourceDone& done) {
  const std::int64_t rows = e.rows();
  const std::int64_t cols = e.cols();
  const std::size_t src_elem = checkpoint::DTypeSize(e.source_dtype);
  if (!IsFloatDType(e.source_dtype)) {
    return InvalidArgumentError("tensor '" + e.name + "': source dtype " + checkpoint::DTypeName(e.source_dtype) +
                                " is not F32, BF16 or F16");
  }
  const std::int64_t chunk_rows = std::max<std::int64_t>(1, chunk_elems_ / std::max<std::int64_t>(cols, 1));
  const bool need_f32 = e.quantized() || e.pruned > 0;
  if (need_f32) scratch_.resize(static_cast<std::size_t>(std::min(rows, chunk_rows) * cols));
  auto read_f32 = [&](std::int64_t begin, std::int64_t count, float* dst) {
    return ToF32(src + static_cast<std::uint64_t>(begin) * src_elem, e.source_dtype, dst,
                 static_cast<std::size_t>(count));
  };

  PrunePlan prune;
  if (e.pruned > 0) {
    auto plan =
        PlanPruneCount(e.numel(), e.pruned, read_f32, scratch_.data(), static_cast<std::int64_t>(scratch_.size()));
    if (!plan.ok()) return plan.status().WithContext("tensor '" + e.name + "'");
    prune = *plan;
  }

  std::int64_t zeroed = 0;
  for (std::int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const std::int64_t n_rows = std::min(chunk_rows, rows - r0);
    const std::int64_t first = r0 * cols;
    const std::int64_t count = n_rows * cols;
    Status s;
    if (!need_f32) {
      s = ConvertFloats(src + first * src_elem, e.source_dtype,
                        data + e.offset + first * checkpoint::DTypeSize(e.dtype), e.dtype,
                        static_cast<std::size_t>(count));
    } else {
      s = read_f32(first, count, scratch_.data());
      if (s.ok() && e.pruned > 0) zeroed += ApplyPrunePlan(prune, first, scratch_.data(), count);
      if (s.ok()) s = StoreF32Rows(e, scratch_.data(), r0, n_rows, data);
    }
    if (!s.ok()) return s.WithContext("tensor '" + e.name + "'");
    if (done) done(static_cast<std::uint64_t>(first) * src_elem, static_cast<std::uint64_t>(first + count) * src_elem);
  }
  if (zeroed != e.pruned) {
    return InternalError("tensor '" + e.name + "': pruned " + std::to_string(zeroed) + " elements, planned " +
                         std::to_string(e.pruned));
  }
  return OkStatus();
}

}  // namespace unmask::weights
