// y = x W^T in float32 for the few-row products of diffusion sampling (a block of 32 rows through
// a 126464-row LM head, a 96-token sequence through the layers), without repacking W.
//
// A BLAS packs W into its own panel layout at every call; with few rows of x that packing costs
// as much as the multiply (the LM head is 260 MB at float32). These kernels read W once, in the
// layout it is stored in ([N, K], row-major), a few rows at a time, and multiply them with every
// row of x from cache. Two paths, chosen at run time (cpu_features.h):
//   - kAvx512 (AVX-512F + FMA): 6 x-rows by 4 W-rows in 24 zmm accumulators, 16 lanes;
//   - kAvx2 (AVX2 + FMA): 4 x-rows by 3 W-rows in 12 ymm accumulators, 8 lanes.
// W may be stored as float32 or as bf16 bits (what a bf16 checkpoint or shared segment holds);
// bf16 is widened to float32 as it is loaded (a 16-bit left shift, exact), so the arithmetic is
// float32 either way and a bf16 W costs half the memory traffic. W-rows are split across the
// intra-op threads.
//
// Sums run in a different order than a BLAS does, so results differ from at::linear in the last
// bits (tests bound the difference), and the two paths differ from each other likewise. On one
// path the same input always gives the same bits, whatever the thread count and whichever tile a
// row falls into: each output element is one accumulator's lanes, summed over k in one fixed
// order and reduced once at the end, by one thread.
#pragma once

#include <cstdint>

#include "common/model/cpu_features.h"
#include "common/util/status.h"

namespace unmask::model {

// Rows of x up to which Linear's float32 products with a float32 W go to the few-row kernels
// (past that the BLAS's packing pays off; bench_small_gemm compares them). A bf16 W goes to them at
// any row count.
inline constexpr std::int64_t kSmallGemmMaxRows = 320;

// The path Linear uses for few-row float32 products, process-wide. Starts as
// BestGemmPath(HostCpuFeatures()).
GemmPath ActiveGemmPath();
// InvalidArgument (naming the path and the missing CPU flags) when this CPU cannot run `path`;
// kBlas always works.
Status SetGemmPath(GemmPath path);

// y[m * ldy + n] = sum_k x[m * K + k] * w[n * K + k] for m < M, n < N. x, w contiguous.
// `path` must be kAvx2 or kAvx512 and run on this CPU (std::invalid_argument otherwise).
void SmallGemmF32(GemmPath path, const float* x, std::int64_t M, std::int64_t K, const float* w, std::int64_t N,
                  float* y, std::int64_t ldy);
// The same with W stored as bf16 bits (what a bf16 checkpoint or shared segment holds), computed
// in float32: the result is SmallGemmF32 of the float32 upcast of W, bit for bit.
void SmallGemmBf16W(GemmPath path, const float* x, std::int64_t M, std::int64_t K, const std::uint16_t* w,
                    std::int64_t N, float* y, std::int64_t ldy);

// bf16 x and bf16 W (what bf16 compute multiplies), summed in float32. Where `path` is kAvx512 and
// the CPU has AVX512_BF16 (SmallGemmBf16Native), vdpbf16ps adds the exact products of each pair of
// k (half the instructions of the float32 tiles); elsewhere x is widened (exact) and the product is
// SmallGemmBf16W's. Either way a row of y depends only on its row of x, never on M, and the two
// ways differ from each other, and from a BLAS, only in the order of the sums.
bool SmallGemmBf16Native(GemmPath path);
void SmallGemmBf16(GemmPath path, const std::uint16_t* x, std::int64_t M, std::int64_t K, const std::uint16_t* w,
                   std::int64_t N, float* y, std::int64_t ldy);
// SmallGemmBf16's sums, each rounded to bf16 bits as it is stored (nearest even, as c10::BFloat16
// rounds): what a bf16 linear layer outputs, with no float32 buffer between. Only where
// SmallGemmBf16Native(path) (std::invalid_argument elsewhere).
void SmallGemmBf16Rounded(GemmPath path, const std::uint16_t* x, std::int64_t M, std::int64_t K,
                          const std::uint16_t* w, std::int64_t N, std::uint16_t* y, std::int64_t ldy);

}  // namespace unmask::model
