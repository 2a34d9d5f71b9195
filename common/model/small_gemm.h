// y = x W^T in float32 for the few-row products of diffusion sampling (a block of 32 rows through
// a 126464-row LM head, a 96-token sequence through the layers), without repacking W.
//
// A BLAS packs W into its own panel layout at every call; with few rows of x that packing costs
// as much as the multiply (the LM head is 260 MB at float32). This kernel reads W once, in the
// layout it is stored in ([N, K], row-major), 4 rows at a time, and multiplies them with every
// row of x from cache: 6 x-rows by 4 W-rows in 24 AVX-512 accumulators. W-rows are split across
// the intra-op threads.
//
// Sums run in a different order than a BLAS does, so results differ from at::linear in the last
// bits (tests bound the difference); the same input always gives the same bits, whatever the
// thread count, because each output element is computed by one thread in one fixed order.
#pragma once

#include <cstdint>

namespace unmask::model {

// True when this CPU runs the kernel (AVX-512F); otherwise callers use their BLAS.
bool SmallGemmSupported();
// Supported and not switched off: Linear uses the kernel for float32 products with few rows.
bool SmallGemmEnabled();
// Process-wide switch (on by default), for side-by-side benchmarks against the BLAS.
void SetSmallGemmEnabled(bool enabled);

// y[m * ldy + n] = sum_k x[m * K + k] * w[n * K + k] for m < M, n < N. x, w contiguous.
// Requires SmallGemmSupported().
void SmallGemmF32(const float* x, std::int64_t M, std::int64_t K, const float* w, std::int64_t N, float* y,
                  std::int64_t ldy);

}  // namespace unmask::model
