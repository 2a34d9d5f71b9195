// SwiGLU's elementwise middle, silu(gate) * up, in one pass over the rows with the bits ATen's
// vectorised CPU operators give for at::silu(gate) * up: silu is x / (1 + exp(-x)) with SLEEF's
// expf (1.0-ULP, the function ATen's vectors call), in float32; on bf16, as ATen 1.13 computes it,
// exp(-x), 1 + exp(-x) and the quotient are each rounded to bf16, and so is the product with up.
// ATen's bf16 silu converts at every step, 2.4 ns an element on a Zen 5 core (160-360 us for a
// 211-row batch step's 704-wide MLP, more than the step's attention products); this is one pass.
//
// `path` picks the instructions as for the few-row kernels (cpu_features.h's GemmPath): kAvx512
// runs 16 lanes, kAvx2 8 lanes; both give the same bits (SLEEF's expf is the same algorithm at
// both widths; a test checks the two over every 7th float32). Elements past the last whole
// vector go through the same vector code from a padded buffer, so every element's bits are the
// same whatever the length or the split across threads. These return false, computing nothing,
// where they cannot run: the build has no SLEEF (UNMASK_HAVE_SLEEF), `path` is kBlas, or this CPU
// lacks the path's instructions; the caller then composes ATen's operators.
#pragma once

#include <cstdint>

#include "common/model/cpu_features.h"

namespace unmask::model {

// out[i] = bf16(silu(gate[i]) * up[i]) for i < n, silu's steps rounded as above; bf16 bits in and out.
bool SiluMulBf16(GemmPath path, const std::uint16_t* gate, const std::uint16_t* up, std::int64_t n,
                 std::uint16_t* out);

// out[i] = silu(gate[i]) * up[i] for i < n, in float32.
bool SiluMulF32(GemmPath path, const float* gate, const float* up, std::int64_t n, float* out);

// Whether SiluMulBf16 and SiluMulF32 can run `path` on this CPU in this build.
bool SiluMulRuns(GemmPath path);
// Whether this build has the loops at all (it was built with SLEEF).
bool ActivationLoopsBuilt();

// The vector form the SLEEF-based loops (these, greedy_rows.h) run for `path` on this CPU in this
// build: AVX-512F for kAvx512 where the CPU has it, else AVX2+FMA for any path but kBlas where it
// has those, else none.
enum class SleefForm { kNone, kAvx2, kAvx512 };
SleefForm SleefFormFor(GemmPath path);

}  // namespace unmask::model
