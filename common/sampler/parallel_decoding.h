// Parallel decoding rules: how many masked tokens of the current block one step unmasks when the
// count is decided by the model's confidence instead of the reference's fixed schedule
// (base = M // S per step). Both rules are Fast-dLLM's (arXiv 2505.22618, NVlabs/Fast-dLLM); both
// look only at the confidences of the still-masked positions of the current block of one batch
// row, sorted in descending order (c_1 >= c_2 >= ... >= c_m), and return how many of the top ones
// to unmask, n in [1, m] (0 only when m = 0). The positions unmasked are then the n most confident
// ones, chosen exactly as the reference chooses its top-k. The confidences are Fast-dLLM's: the
// softmax probability of the chosen token, the softmax taken in float64 (with bf16 compute the
// logits are only good to ~3 significant digits), or the uniform draw with random remasking.
//
//  - threshold: n = #{ i : c_i >= threshold }, but at least 1 (the most confident token is always
//    unmasked, so every step makes progress). threshold 0 unmasks the whole block in one step
//    (every confidence is >= 0); a threshold above 1 degenerates to one token per step.
//  - factor: n = the largest n with c_n >= 1 - factor / (n + 1), at least 1. Since c_n falls and
//    1 - factor / (n + 1) rises with n, this is also the length of the leading run of sorted
//    confidences that pass their own bound. The paper writes the rule as (n + 1)(1 - c_n) < f;
//    the official code compares c_n >= 1 - f / (n + 1) (ties pass), which is what is done here.
//    As in the official code, when exactly the last of m > 1 sorted confidences fails its bound
//    all m are unmasked (its loop cannot tell that apart from "all passed").
//
// With either rule a block takes between 1 and block_length steps (not steps / num_blocks): the
// sampler moves on to the next block as soon as the current one has no masks left.
#pragma once

#include <cstdint>
#include <vector>

namespace unmask::sampler {

std::int64_t ThresholdCount(const std::vector<double>& sorted_confidences, double threshold);
std::int64_t FactorCount(const std::vector<double>& sorted_confidences, double factor);

}  // namespace unmask::sampler
