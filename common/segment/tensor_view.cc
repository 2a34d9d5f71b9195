#include "common/segment/tensor_view.h"

#include "common/quant/convert.h"

namespace unmask::weights {

using checkpoint::DType;

TensorView MakeTensorView(const TensorEntry& entry, const std::uint8_t* data_region) {
  TensorView v;
  v.entry = &entry;
  v.data = data_region + entry.offset;
  if (entry.quantized()) {
    v.scales = data_region + entry.quant.scales_offset;
    if (entry.quant.zeros_nbytes != 0) v.zeros = data_region + entry.quant.zeros_offset;
  }
  return v;
}

StatusOr<Int8Tensor> TensorView::AsInt8() const {
  if (quant().scheme != QuantScheme::kInt8PerChannel)
    return InvalidArgumentError("tensor '" + name() + "' is not int8_per_channel but " +
                                QuantSchemeName(quant().scheme));
  return Int8Tensor{reinterpret_cast<const std::int8_t*>(data), reinterpret_cast<const float*>(scales), rows(), cols()};
}

StatusOr<Int4Tensor> TensorView::AsInt4() const {
  if (quant().scheme != QuantScheme::kInt4Groupwise)
    return InvalidArgumentError("tensor '" + name() + "' is not int4_groupwise but " + QuantSchemeName(quant().scheme));
  return Int4Tensor{data, reinterpret_cast<const std::uint16_t*>(scales), zeros,
                    Int4Layout{rows(), cols(), quant().group_size, quant().symmetric}};
}

namespace {

template <typename Out>
Status DequantizeAny(const TensorView& t, std::int64_t row_begin, std::int64_t row_end, Out* out, DType out_dtype) {
  switch (t.quant().scheme) {
    case QuantScheme::kInt8PerChannel: {
      UNMASK_ASSIGN_OR_RETURN(Int8Tensor q, t.AsInt8());
      if constexpr (std::is_same_v<Out, float>)
        return DequantizeRows(q, row_begin, row_end, out);
      else
        return DequantizeRowsBf16(q, row_begin, row_end, out);
    }
    case QuantScheme::kInt4Groupwise: {
      UNMASK_ASSIGN_OR_RETURN(Int4Tensor q, t.AsInt4());
      if constexpr (std::is_same_v<Out, float>)
        return DequantizeRows(q, row_begin, row_end, out);
      else
        return DequantizeRowsBf16(q, row_begin, row_end, out);
    }
    case QuantScheme::kNone:
      break;
  }
  if (row_begin < 0 || row_end < row_begin || row_end > t.rows())
    return OutOfRangeError("tensor '" + t.name() + "': row range [" + std::to_string(row_begin) + ", " +
                           std::to_string(row_end) + ") is outside [0, " + std::to_string(t.rows()) + ")");
  const std::size_t elem = checkpoint::DTypeSize(t.dtype());
  return ConvertFloats(t.data + static_cast<std::size_t>(row_begin * t.cols()) * elem, t.dtype(), out, out_dtype,
                       static_cast<std::size_t>((row_end - row_begin) * t.cols()));
}

}  // namespace

Status DequantizeRows(const TensorView& t, std::int64_t row_begin, std::int64_t row_end, float* out) {
  return DequantizeAny(t, row_begin, row_end, out, DType::kF32);
}

Status DequantizeRowsBf16(const TensorView& t, std::int64_t row_begin, std::int64_t row_end, std::uint16_t* out) {
  return DequantizeAny(t, row_begin, row_end, out, DType::kBF16);
}

}  // namespace unmask::weights
