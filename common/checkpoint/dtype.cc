#include "common/checkpoint/dtype.h"

namespace unmask::checkpoint {
namespace {
struct DTypeRow {
  DType dtype;
  const char* name;
  std::size_t size;
};
constexpr DTypeRow kRows[] = {
    {DType::kBF16, "BF16", 2}, {DType::kF16, "F16", 2}, {DType::kF32, "F32", 4},
    {DType::kF64, "F64", 8},   {DType::kI8, "I8", 1},   {DType::kU8, "U8", 1},
    {DType::kI16, "I16", 2},   {DType::kI32, "I32", 4}, {DType::kI64, "I64", 8},
    {DType::kBool, "BOOL", 1},
};
}  // namespace

std::optional<DType> ParseDType(std::string_view name) {
  for (const auto& row : kRows) {
    if (name == row.name) return row.dtype;
  }
  return std::nullopt;
}

const char* DTypeName(DType dtype) {
  for (const auto& row : kRows) {
    if (row.dtype == dtype) return row.name;
  }
  return "?";
}

std::size_t DTypeSize(DType dtype) {
  for (const auto& row : kRows) {
    if (row.dtype == dtype) return row.size;
  }
  return 0;
}

}  // namespace unmask::checkpoint
