// The greedy pick of low-confidence remasking over a step's logits, in one pass per row without a
// float64 copy of the logits: for each row, x0 = the index of its largest logit (the first one;
// a NaN counts as the largest, as ATen's argmax) and confidence = softmax(row in float64)[x0],
// the probability Fast-dLLM's samplers rank and threshold. `excluded` ids (EOS/EoT where the
// sampler sets them to -inf after the argmax) count as -inf in the softmax only.
//
// What it replaces: logits.to(kDouble), argmax, softmax, gather. At LLaDA's vocabulary (126,464)
// that is two 32 MB float64 tensors for a 32-row block, allocated, page-faulted and freed every
// step: 121 ms a step on a Zen 5 core, against under 1 ms for the forward of a small model.
//
// The softmax is computed as ATen's CPU softmax does (exp(x - max) with SLEEF's 1.0-ULP exp, the
// function ATen's vectors call, summed in float64, then exp(x0 - max) * (1 / sum)), summed in
// eight lanes in one fixed order on every path, so the AVX-512 and AVX2 forms give the same bits
// and a row's result does not depend on the other rows. The sum's order is not ATen's, so the
// last bit of a confidence can differ from at::softmax's; decisions differ only where two
// confidences, or a confidence and a threshold, are within that bit.
//
// These return false, computing nothing, where they cannot run (no SLEEF in the build, `path`
// kBlas, or the CPU lacks the path's instructions); the caller then composes ATen's operators.
#pragma once

#include <cstdint>
#include <vector>

#include "common/model/cpu_features.h"

namespace unmask::model {

// `logits`: rows x vocab, row-major. Writes x0[rows] and confidence[rows].
bool GreedyConfidenceF32(GemmPath path, const float* logits, std::int64_t rows, std::int64_t vocab,
                         const std::vector<std::int64_t>& excluded, std::int64_t* x0, double* confidence);
// The same over bf16 bits.
bool GreedyConfidenceBf16(GemmPath path, const std::uint16_t* logits, std::int64_t rows, std::int64_t vocab,
                          const std::vector<std::int64_t>& excluded, std::int64_t* x0, double* confidence);

// Whether the two above can run `path` on this CPU in this build.
bool GreedyConfidenceRuns(GemmPath path);

}  // namespace unmask::model
