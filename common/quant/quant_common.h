// Helpers shared by the quantization schemes (internal to unmask_weights; not a public API).
#pragma once

#include <cstdint>
#include <string>

#include "common/util/status.h"
#include "common/quant/convert.h"

// The element loops are plain C++ that GCC vectorizes. Baseline x86-64 has only SSE2, which
// lacks the narrowing and widening instructions these loops need; on x86-64 the hot loops are
// therefore also compiled for AVX2 and picked at load time (GCC function multiversioning via
// ifunc), so one binary runs everywhere and uses AVX2 where the CPU has it.
// Not under ThreadSanitizer: GCC instruments the ifunc resolvers, which the dynamic loader runs
// before the TSan runtime is initialized, and the program crashes before main
// (docs/sanitizers.md).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define UNMASK_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define UNMASK_SIMD_CLONES
#endif

namespace unmask::weights::internal {

// Round to nearest, ties to even, for |x| < 2^22, without a libm call so that loops vectorize:
// adding and subtracting 1.5 * 2^23 leaves only the integer part, rounded by the FPU's mode.
inline float RoundNearestEven(float x) {
  constexpr float kMagic = 12582912.0f;
  return (x + kMagic) - kMagic;
}

inline bool IsFiniteBits(float f) { return (FloatBits(f) & 0x7f800000u) != 0x7f800000u; }

// Index of the first non-finite value in w[0, n), or -1.
inline std::int64_t FirstNonFinite(const float* w, std::int64_t n) {
  bool any = false;
  for (std::int64_t i = 0; i < n; ++i) any |= !IsFiniteBits(w[i]);
  if (!any) return -1;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!IsFiniteBits(w[i])) return i;
  }
  return -1;
}

inline Status NonFiniteError(const char* scheme, std::int64_t row, std::int64_t col, float value) {
  return InvalidArgumentError(std::string(scheme) + ": weight at row " + std::to_string(row) + ", column " +
                              std::to_string(col) + " is not finite (" + std::to_string(value) + ")");
}

inline Status CheckRowRange(const char* scheme, std::int64_t rows, std::int64_t row_begin, std::int64_t row_end) {
  if (row_begin < 0 || row_end < row_begin || row_end > rows) {
    return OutOfRangeError(std::string(scheme) + ": row range [" + std::to_string(row_begin) + ", " +
                           std::to_string(row_end) + ") is outside [0, " + std::to_string(rows) + ")");
  }
  return OkStatus();
}

inline Status CheckShape(const char* scheme, std::int64_t rows, std::int64_t cols) {
  if (rows < 0 || cols <= 0) {
    return InvalidArgumentError(std::string(scheme) + ": invalid shape [" + std::to_string(rows) + ", " +
                                std::to_string(cols) + "]");
  }
  return OkStatus();
}

}  // namespace unmask::weights::internal
