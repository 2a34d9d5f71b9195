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
// Bit for bit what the generic path computes, whatever the thread count: each expert's products
// are the same Linear::Apply over the same rows (the kernels give a row the same bits whatever
// rows surround it), and the mixing keeps the official order of additions. (Computing bf16
// experts of a few rows in float32 through the few-row kernels was faster at 32 rows, but made a
// row's bits depend on how many rows shared its expert: LLaDA2's cached and uncached passes then
// chose different ids. Not done.)
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
