// Internal to small_gemm: the tiles of each path (small_gemm_avx512.cc, small_gemm_avx2.cc),
// which small_gemm.cc splits across threads. W-rows [begin, end) against every row of x, in tiles
// of k<Path>RowsW W-rows (the split puts chunk boundaries between whole tiles).
#pragma once

#include <xmmintrin.h>

#include <cstdint>

namespace unmask::model::small_gemm_internal {

extern const std::int64_t kAvx512RowsW, kAvx2RowsW;
void Avx512WRows(const float* x, std::int64_t M, std::int64_t K, const float* w, std::int64_t begin,
                 std::int64_t end, float* y, std::int64_t ldy);
void Avx512WRows(const float* x, std::int64_t M, std::int64_t K, const std::uint16_t* w, std::int64_t begin,
                 std::int64_t end, float* y, std::int64_t ldy);
// bf16 x and W through AVX512_BF16 (kAvx512RowsW W-rows a tile); only where the CPU has it.
void Avx512Bf16WRows(const std::uint16_t* x, std::int64_t M, std::int64_t K, const std::uint16_t* w,
                     std::int64_t begin, std::int64_t end, float* y, std::int64_t ldy);
// The same with each sum rounded to bf16 bits as it is stored.
void Avx512Bf16WRows(const std::uint16_t* x, std::int64_t M, std::int64_t K, const std::uint16_t* w,
                     std::int64_t begin, std::int64_t end, std::uint16_t* y, std::int64_t ldy);
void Avx2WRows(const float* x, std::int64_t M, std::int64_t K, const float* w, std::int64_t begin,
               std::int64_t end, float* y, std::int64_t ldy);
void Avx2WRows(const float* x, std::int64_t M, std::int64_t K, const std::uint16_t* w, std::int64_t begin,
               std::int64_t end, float* y, std::int64_t ldy);

// Fetches the cache line of base[offset]. The last W tile fetches the tile after it, past the end
// of W: the address is formed as an integer, not as a pointer past the array, and a prefetch
// faults nothing.
template <typename T>
inline void PrefetchElement(const T* base, std::int64_t offset) {
  const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(base) + static_cast<std::uintptr_t>(offset) * sizeof(T);
  _mm_prefetch(reinterpret_cast<const char*>(address), _MM_HINT_T0);
}

}  // namespace unmask::model::small_gemm_internal
