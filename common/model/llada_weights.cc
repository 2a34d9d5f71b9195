#include "common/model/llada_weights.h"

#include <ATen/ATen.h>

#include "common/model/torch_util.h"

namespace unmask::model {
namespace {

at::ScalarType StoredScalarType(checkpoint::DType dtype) {
  switch (dtype) {
    case checkpoint::DType::kBF16: return at::kBFloat16;
    case checkpoint::DType::kF16: return at::kHalf;
    default: return at::kFloat;
  }
}

}  // namespace

StatusOr<LladaWeights> LoadLladaWeights(const checkpoint::LladaConfig& config,
                                        std::shared_ptr<const checkpoint::Checkpoint> ckpt,
                                        const ModelOptions& options) {
  UNMASK_RETURN_IF_ERROR(checkpoint::ValidateCheckpoint(config, *ckpt));
  UNMASK_ASSIGN_OR_RETURN(at::Device device, ParseDevice(options.device));
  const at::ScalarType compute = ToScalarType(options.precision);
  bool any_view = false;

  auto read = [&](const std::string& name) -> StatusOr<at::Tensor> {
    UNMASK_ASSIGN_OR_RETURN(checkpoint::TensorRef ref, ckpt->Find(name));
    const at::ScalarType stored = StoredScalarType(ref.info->dtype);
    at::Tensor view = at::from_blob(const_cast<std::uint8_t*>(ref.data()), ref.info->shape,
                                    at::TensorOptions().dtype(stored));
    if (stored == compute && device.is_cpu()) {
      any_view = true;
      return view;  // read-only use; the mapping is kept alive by `backing`
    }
    return view.to(device, compute, /*non_blocking=*/false, /*copy=*/true);
  };

  try {
    LladaWeights w;
    const std::string p = "model.transformer.";
    UNMASK_ASSIGN_OR_RETURN(w.wte, read(p + "wte.weight"));
    for (std::int64_t i = 0; i < config.n_layers; ++i) {
      const std::string b = p + "blocks." + std::to_string(i) + ".";
      LladaBlockWeights blk;
      UNMASK_ASSIGN_OR_RETURN(blk.attn_norm, read(b + "attn_norm.weight"));
      UNMASK_ASSIGN_OR_RETURN(blk.ff_norm, read(b + "ff_norm.weight"));
      UNMASK_ASSIGN_OR_RETURN(at::Tensor t, read(b + "q_proj.weight"));
      blk.q_proj = Linear(t);
      UNMASK_ASSIGN_OR_RETURN(t, read(b + "k_proj.weight"));
      blk.k_proj = Linear(t);
      UNMASK_ASSIGN_OR_RETURN(t, read(b + "v_proj.weight"));
      blk.v_proj = Linear(t);
      UNMASK_ASSIGN_OR_RETURN(t, read(b + "attn_out.weight"));
      blk.attn_out = Linear(t);
      UNMASK_ASSIGN_OR_RETURN(t, read(b + "ff_proj.weight"));
      blk.ff_proj = Linear(t);
      UNMASK_ASSIGN_OR_RETURN(t, read(b + "up_proj.weight"));
      blk.up_proj = Linear(t);
      UNMASK_ASSIGN_OR_RETURN(t, read(b + "ff_out.weight"));
      blk.ff_out = Linear(t);
      w.blocks.push_back(std::move(blk));
    }
    UNMASK_ASSIGN_OR_RETURN(w.ln_f, read(p + "ln_f.weight"));
    if (config.weight_tying) {
      w.lm_head = Linear(w.wte);
    } else {
      UNMASK_ASSIGN_OR_RETURN(at::Tensor head, read(p + "ff_out.weight"));
      w.lm_head = Linear(head);
    }
    if (any_view) w.backing = ckpt;
    return w;
  } catch (const std::exception& e) {
    return InternalError(ckpt->dir() + ": loading weights failed: " + e.what());
  }
}

}  // namespace unmask::model
