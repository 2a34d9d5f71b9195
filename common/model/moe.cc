#include "common/model/moe.h"

#include <ATen/ATen.h>

#include <limits>
#include <tuple>

#include "common/model/layers.h"
#include "common/model/moe_cpu.h"

namespace unmask::model {
namespace {

thread_local const ScopedRoutingObserver::Callback* current_observer = nullptr;

// The device-generic path (moe_cpu.h has the CPU's), ATen operators only. The chosen experts'
// outputs, one row per (row, choice) slot, in the order of the slots sorted by expert id (stable:
// rows ascending within an expert). Each expert runs once, over exactly the rows that chose it.
struct ExpertOutputs {
  at::Tensor order;    // [N * top_k] slot index (row * top_k + j) of each sorted position
  at::Tensor outputs;  // [N * top_k, d_model] expert(row) in sorted order
};

ExpertOutputs RunChosenExperts(const MoeWeights& w, const at::Tensor& h, const Routing& r) {
  const std::int64_t top_k = r.experts.size(1);
  const auto num_experts = static_cast<std::int64_t>(w.experts.size());
  const at::Tensor slots = r.experts.reshape({-1});
  ExpertOutputs out;
  out.order = std::get<1>(at::sort(slots, /*stable=*/true, /*dim=*/0, /*descending=*/false));
  const at::Tensor rows = h.index_select(0, at::div(out.order, top_k, "floor"));
  const at::Tensor counts = at::bincount(slots, {}, num_experts).to(at::kCPU);
  const auto* count = counts.data_ptr<std::int64_t>();
  std::vector<at::Tensor> parts;
  std::int64_t start = 0;
  for (std::int64_t e = 0; e < num_experts; ++e) {
    if (count[e] == 0) continue;
    parts.push_back(w.experts[e].Apply(rows.narrow(0, start, count[e])));
    start += count[e];
  }
  out.outputs = parts.size() == 1 ? parts[0] : at::cat(parts, 0);
  return out;
}

// LLaDA-MoE's mixing: weight (cast to the activation dtype) x output, accumulated into each row
// expert by expert in ascending id (the official loop of index_add_ calls, in one call: the slots
// are sorted by expert).
at::Tensor MixByExpertOrder(const ExpertOutputs& x, const Routing& r, const at::Tensor& h) {
  const at::Tensor weights = r.weights.reshape({-1}).index_select(0, x.order).to(h.scalar_type());
  const at::Tensor rows = at::div(x.order, r.experts.size(1), "floor");
  return at::zeros_like(h).index_add_(0, rows, x.outputs * weights.unsqueeze(1));
}

// LLaDA2's mixing (moe_infer): outputs back in slot order, then in float32 weight x output summed
// over each row's choices in routing order, cast back.
at::Tensor MixBySlotOrder(const ExpertOutputs& x, const Routing& r, const at::Tensor& h) {
  const std::int64_t n = h.size(0), top_k = r.experts.size(1);
  at::Tensor by_slot = at::empty_like(x.outputs).index_copy_(0, x.order, x.outputs);
  return (by_slot.view({n, top_k, -1}).to(at::kFloat) * r.weights.unsqueeze(-1)).sum(1).to(h.scalar_type());
}

}  // namespace

at::Tensor SwiGluWeights::Apply(const at::Tensor& x) const {
  return down_proj.Apply(SiluTimes(gate_proj.Apply(x), up_proj.Apply(x)));
}

Routing RouteSoftmax(const at::Tensor& router_logits, const at::Tensor& expert_bias, std::int64_t top_k) {
  at::Tensor p = at::softmax(router_logits, -1, at::kFloat);
  if (expert_bias.defined()) p = p + expert_bias.to(at::kFloat);
  auto [values, indices] = at::topk(p, top_k, -1, /*largest=*/true, /*sorted=*/true);
  return {indices, values};
}

Routing RouteSigmoidGrouped(const at::Tensor& router_logits, const at::Tensor& expert_bias,
                            const checkpoint::MoeConfig& moe) {
  const at::Tensor scores = at::sigmoid(router_logits.to(at::kFloat));
  at::Tensor choice = expert_bias.defined() ? scores + expert_bias.to(at::kFloat) : scores;
  // With one group every expert's group is kept: plain top-k (the official code computes the
  // same through the group steps).
  if (moe.n_group > 1) {
    const std::int64_t n = choice.size(0), per_group = choice.size(1) / moe.n_group;
    const at::Tensor group_scores =
        std::get<0>(choice.view({n, moe.n_group, per_group}).topk(2, -1)).sum(-1);  // [N, n_group]
    const at::Tensor kept = std::get<1>(group_scores.topk(moe.topk_group, -1, true, /*sorted=*/false));
    const at::Tensor group_mask = at::zeros_like(group_scores).scatter_(1, kept, 1.0);
    const at::Tensor expert_mask =
        group_mask.unsqueeze(-1).expand({n, moe.n_group, per_group}).reshape({n, -1}).to(at::kBool);
    choice = choice.masked_fill(expert_mask.logical_not(), -std::numeric_limits<float>::infinity());
  }
  const at::Tensor chosen = std::get<1>(choice.topk(moe.top_k, -1, /*largest=*/true, /*sorted=*/true));
  at::Tensor weights = scores.gather(1, chosen);
  if (moe.top_k > 1) weights = weights / (weights.sum(-1, /*keepdim=*/true) + 1e-20);
  return {chosen, weights * moe.routed_scaling_factor};
}

Routing Route(const checkpoint::LladaConfig& config, const MoeWeights& w, const at::Tensor& h) {
  if (config.architecture == checkpoint::Architecture::kLlada2Moe) {
    return RouteSigmoidGrouped(at::linear(h.to(at::kFloat), w.router_fp32), w.expert_bias, config.moe);
  }
  return RouteSoftmax(w.router.Apply(h), w.expert_bias, config.moe.top_k);
}

at::Tensor MoeForward(const checkpoint::LladaConfig& config, const MoeWeights& w, const at::Tensor& h,
                      std::int64_t layer) {
  const Routing routing = Route(config, w, h);
  if (const ScopedRoutingObserver::Callback* observer = ScopedRoutingObserver::Current()) (*observer)(layer, routing);
  const bool slot_order = config.architecture == checkpoint::Architecture::kLlada2Moe;
  at::Tensor y;
  if (h.device().is_cpu() && (h.scalar_type() == at::kFloat || h.scalar_type() == at::kBFloat16)) {
    y = RoutedExpertsCpu(w, h, routing, slot_order ? MoeMixOrder::kSlotOrder : MoeMixOrder::kExpertOrder);
  } else {
    const ExpertOutputs outputs = RunChosenExperts(w, h, routing);
    y = slot_order ? MixBySlotOrder(outputs, routing, h) : MixByExpertOrder(outputs, routing, h);
  }
  if (w.has_shared) y = y + w.shared.Apply(h);
  return y;
}

ScopedRoutingObserver::ScopedRoutingObserver(Callback callback)
    : callback_(std::move(callback)), previous_(current_observer) {
  current_observer = &callback_;
}

ScopedRoutingObserver::~ScopedRoutingObserver() { current_observer = previous_; }

const ScopedRoutingObserver::Callback* ScopedRoutingObserver::Current() { return current_observer; }

}  // namespace unmask::model
