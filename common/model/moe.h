// The mixture-of-experts block of LLaDA-MoE and LLaDA2.x, computed as their official modeling code
// does (tests/data/moe-golden.md): a router picks top_k experts per row, only those experts run
// (rows grouped per expert: one product per chosen expert over the rows that chose it, never every
// expert on every row), their outputs are mixed by the routing weights, and the shared expert, when
// there is one, is added.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "common/checkpoint/llada_config.h"
#include "common/model/linear.h"

namespace unmask::model {

// A SwiGLU MLP: down(silu(gate(x)) * up(x)).
struct SwiGluWeights {
  Linear gate_proj, up_proj, down_proj;
  at::Tensor Apply(const at::Tensor& x) const;
};

struct MoeWeights {
  Linear router;            // LLaDA-MoE: [num_experts, d_model], applied in the compute dtype
  at::Tensor router_fp32;   // LLaDA2: the same weight in float32 (its router always runs in float32)
  at::Tensor expert_bias;   // [num_experts] float32, or undefined
  std::vector<SwiGluWeights> experts;
  SwiGluWeights shared;  // used only when has_shared
  bool has_shared = false;

  bool empty() const { return experts.empty(); }
};

// Where each row goes: row i is sent to experts[i][j] with weight weights[i][j] (j < top_k).
struct Routing {
  at::Tensor experts;  // [N, top_k] int64
  at::Tensor weights;  // [N, top_k] float32
};

// LLaDA-MoE (LLaDAMoESparseMoeBlock): p = softmax(logits) in float32, p += expert_bias when
// defined (the bias changes the weights too, not only the choice), top_k of p; no renormalising.
// Experts in descending order of p.
Routing RouteSoftmax(const at::Tensor& router_logits, const at::Tensor& expert_bias, std::int64_t top_k);

// LLaDA2 (LLaDA2MoeGate), in float32: s = sigmoid(logits); b = s + expert_bias chooses: experts
// in n_group contiguous groups, a group scored by the sum of its 2 largest b, the topk_group best
// groups kept, the top_k largest b among their experts chosen (descending b). The weights are the
// chosen s, divided by their sum (+1e-20) when top_k > 1, times routed_scaling_factor.
Routing RouteSigmoidGrouped(const at::Tensor& router_logits, const at::Tensor& expert_bias,
                            const checkpoint::MoeConfig& moe);

// The router of `config`'s architecture over the normed rows h [N, d_model].
Routing Route(const checkpoint::LladaConfig& config, const MoeWeights& w, const at::Tensor& h);

// The MoE block over h [N, d_model] (the post-attention-normed rows), without the residual:
// sum over the chosen experts of weight x expert(row), plus the shared expert. `layer` is only
// reported to a ScopedRoutingObserver. The result has h's dtype.
at::Tensor MoeForward(const checkpoint::LladaConfig& config, const MoeWeights& w, const at::Tensor& h,
                      std::int64_t layer);

// While one is alive, every MoE layer that runs on this thread reports its routing to it (tests
// check the router against the official choices; a caller may count expert load). Nests: the
// innermost wins.
class ScopedRoutingObserver {
 public:
  using Callback = std::function<void(std::int64_t layer, const Routing& routing)>;
  explicit ScopedRoutingObserver(Callback callback);
  ~ScopedRoutingObserver();
  ScopedRoutingObserver(const ScopedRoutingObserver&) = delete;
  ScopedRoutingObserver& operator=(const ScopedRoutingObserver&) = delete;
  // The innermost observer of this thread, or null.
  static const Callback* Current();

 private:
  Callback callback_;
  const Callback* previous_;
};

}  // namespace unmask::model
