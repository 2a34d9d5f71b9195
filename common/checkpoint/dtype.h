// Element types of safetensors tensors, and their sizes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace unmask::checkpoint {

enum class DType { kBF16, kF16, kF32, kF64, kI8, kU8, kI16, kI32, kI64, kBool };

// Parses the safetensors spelling ("BF16", "F32", "I8", ...); nullopt for anything else.
std::optional<DType> ParseDType(std::string_view name);
// The safetensors spelling of `dtype`.
const char* DTypeName(DType dtype);
std::size_t DTypeSize(DType dtype);

}  // namespace unmask::checkpoint
