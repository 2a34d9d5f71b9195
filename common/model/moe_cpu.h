// The routed experts of an MoE block on the CPU (moe.h's MoeForward takes this path for CPU
// tensors): the same sums as the device-generic path in moe.cc, organised for few rows per expert.
//
// With 64 experts and top-8, a 32-row step gives each expert about 4 rows: ~190 products of a few
// rows each, where waking the intra-op pool for every small operator, and waiting on memory for
// each expert's weights, cost more than the arithmetic. So:
//   - the experts are spread over the intra-op threads (model::ForEachItem), each expert's
//     operators on one thread, the next expert claimed as the current one starts;
//   - that next expert's weights are prefetched while the current one computes;
//   - each expert writes its outputs straight into its slots, and the mixing is one pass over the
//     rows, without the sort, gather, cat and index_add_ temporaries.
//
// Where the few-row kernels run (a kernel path, not the BLAS, and dense weights in memory), an
// expert's three products go straight to them over buffers of the thread's, with only silu and the
// product with up as ATen operators in between (the official SwiGLU's, so their bits are ATen's):
//   - float32 activations: bit for bit the generic path (the same kernel Linear::Apply picks);
//   - bf16 activations: bf16 x times bf16 W summed in float32 (vdpbf16ps where the CPU has
//     AVX512_BF16), each product rounded to bf16 as a bf16 linear layer's output is: within bf16
//     rounding of the generic path, whose BLAS sums in another order. Before, bf16 experts went
//     through oneDNN, whose fixed cost per call took most of the time at a few rows per expert.
// Either way a row's bits do not depend on how many rows share its expert, nor on the thread
// count (what keeps LLaDA2's cached and uncached passes on the same ids). Elsewhere (the BLAS
// path, quantized experts) each product is Linear::Apply's over the expert's rows.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "common/model/moe.h"

namespace unmask::model {

// How the chosen experts' outputs are mixed into a row (moe.cc states whose official code each
// mirrors): kExpertOrder adds weight x output in h's dtype, expert by expert in ascending id;
// kSlotOrder sums weight x output in float32 over the row's choices in routing order.
enum class MoeMixOrder { kExpertOrder, kSlotOrder };

// Sum over each row's chosen experts of weight x expert(row), [N, d_model] in h's dtype (no shared
// expert). h: contiguous-able [N, d_model] on the CPU, float32 or bf16.
at::Tensor RoutedExpertsCpu(const MoeWeights& w, const at::Tensor& h, const Routing& r, MoeMixOrder order);

}  // namespace unmask::model
