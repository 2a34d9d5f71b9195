// SLEEF's exp at the two vector widths ATen's CPU vectors use (libsleef3, the library LibTorch
// links), for the kernels that run ATen's exp outside ATen (activation_rows, attention_cpu,
// greedy_rows). Declared here rather than through <sleef.h>, which declares each width only when
// the whole file is compiled for it; these forms are selected per function at run time instead.
// Only where the build found SLEEF (UNMASK_HAVE_SLEEF).
#pragma once

#ifdef UNMASK_HAVE_SLEEF
#include <immintrin.h>

extern "C" {
__attribute__((target("avx512f"))) __m512 Sleef_expf16_u10avx512f(__m512);
__attribute__((target("avx2,fma"))) __m256 Sleef_expf8_u10avx2(__m256);
__attribute__((target("avx512f"))) __m512d Sleef_expd8_u10avx512f(__m512d);
__attribute__((target("avx2,fma"))) __m256d Sleef_expd4_u10avx2(__m256d);
}
#endif
