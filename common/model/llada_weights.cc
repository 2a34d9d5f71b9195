#include "common/model/llada_weights.h"

#include <ATen/ATen.h>

#include <functional>
#include <unordered_map>

#include "common/model/small_gemm.h"
#include "common/model/torch_util.h"
#include "common/model/weight_readers.h"
#include "common/segment/weight_view.h"

namespace unmask::model {
namespace {

at::ScalarType StoredScalarType(checkpoint::DType dtype) {
  switch (dtype) {
    case checkpoint::DType::kBF16: return at::kBFloat16;
    case checkpoint::DType::kF16: return at::kHalf;
    default: return at::kFloat;
  }
}

// Puts the tensors of a LLaDA model together from whatever stores them.
StatusOr<LladaWeights> Assemble(const checkpoint::LladaConfig& config, const WeightReaders& read) {
  if (config.architecture != checkpoint::Architecture::kLlada) return AssembleMoeFamily(config, read);
  const auto& dense = read.dense;
  const auto& linear = read.linear;
  LladaWeights w;
  const std::string p = "model.transformer.";
  UNMASK_ASSIGN_OR_RETURN(w.wte, linear(p + "wte.weight"));  // dense ones are kept as stored, as the layers
  for (std::int64_t i = 0; i < config.n_layers; ++i) {
    const std::string b = p + "blocks." + std::to_string(i) + ".";
    LladaBlockWeights blk;
    UNMASK_ASSIGN_OR_RETURN(blk.attn_norm, dense(b + "attn_norm.weight", false));
    UNMASK_ASSIGN_OR_RETURN(blk.ff_norm, dense(b + "ff_norm.weight", false));
    UNMASK_ASSIGN_OR_RETURN(blk.q_proj, linear(b + "q_proj.weight"));
    UNMASK_ASSIGN_OR_RETURN(blk.k_proj, linear(b + "k_proj.weight"));
    UNMASK_ASSIGN_OR_RETURN(blk.v_proj, linear(b + "v_proj.weight"));
    UNMASK_ASSIGN_OR_RETURN(blk.attn_out, linear(b + "attn_out.weight"));
    UNMASK_ASSIGN_OR_RETURN(blk.ff_proj, linear(b + "ff_proj.weight"));
    UNMASK_ASSIGN_OR_RETURN(blk.up_proj, linear(b + "up_proj.weight"));
    UNMASK_ASSIGN_OR_RETURN(blk.ff_out, linear(b + "ff_out.weight"));
    w.blocks.push_back(std::move(blk));
  }
  UNMASK_ASSIGN_OR_RETURN(w.ln_f, dense(p + "ln_f.weight", false));
  if (config.weight_tying) {
    w.lm_head = w.wte;
  } else {
    UNMASK_ASSIGN_OR_RETURN(w.lm_head, linear(p + "ff_out.weight"));
  }
  return w;
}

// A tensor over `data`: a zero-copy view when it already has the compute dtype on CPU, or when
// `keep_stored` and it is bf16 computed in fp32 on the CPU by a few-row kernel (they widen bf16
// weights in registers: the weights stay shared and half the bytes are read; without a kernel,
// the BLAS path, the weights are widened once here rather than at every product). With
// `device_data` (the same bytes already in the device's memory), a view of those, converted on
// the device when the dtype differs.
at::Tensor TensorOver(const std::uint8_t* data, const std::vector<std::int64_t>& shape, at::ScalarType stored,
                      at::ScalarType compute, const at::Device& device, bool& is_view, bool keep_stored,
                      const std::uint8_t* device_data = nullptr) {
  if (device_data != nullptr) {
    at::Tensor on_device = at::from_blob(const_cast<std::uint8_t*>(device_data), shape,
                                         at::TensorOptions().dtype(stored).device(device));
    if (stored == compute) {
      is_view = true;
      return on_device;  // kept open by LladaWeights::backing (the AttachedModel)
    }
    return on_device.to(compute);
  }
  at::Tensor view = at::from_blob(const_cast<std::uint8_t*>(data), shape, at::TensorOptions().dtype(stored));
  const bool widened_in_registers =
      keep_stored && stored == at::kBFloat16 && compute == at::kFloat && ActiveGemmPath() != GemmPath::kBlas;
  if ((stored == compute || widened_in_registers) && device.is_cpu()) {
    is_view = true;
    return view;  // read-only use; the mapping is kept alive by LladaWeights::backing
  }
  return view.to(device, compute, /*non_blocking=*/false, /*copy=*/true);
}

}  // namespace

StatusOr<LladaWeights> LoadLladaWeights(const checkpoint::LladaConfig& config,
                                        std::shared_ptr<const checkpoint::Checkpoint> ckpt,
                                        const ModelOptions& options) {
  UNMASK_RETURN_IF_ERROR(checkpoint::ValidateCheckpoint(config, *ckpt));
  UNMASK_ASSIGN_OR_RETURN(at::Device device, ParseDevice(options.device));
  const at::ScalarType compute = ToScalarType(options.precision);
  bool any_view = false;
  auto read_as = [&](const std::string& name, at::ScalarType dtype, bool keep_stored) -> StatusOr<at::Tensor> {
    UNMASK_ASSIGN_OR_RETURN(checkpoint::TensorRef ref, ckpt->Find(name));
    return TensorOver(ref.data(), ref.info->shape, StoredScalarType(ref.info->dtype), dtype, device, any_view,
                      keep_stored);
  };
  WeightReaders read;
  read.dense = [&](const std::string& name, bool keep_stored) { return read_as(name, compute, keep_stored); };
  read.float32 = [&](const std::string& name) { return read_as(name, at::kFloat, false); };
  read.linear = [&](const std::string& name) -> StatusOr<Linear> {
    UNMASK_ASSIGN_OR_RETURN(at::Tensor t, read.dense(name, true));
    return Linear(t);
  };
  try {
    UNMASK_ASSIGN_OR_RETURN(LladaWeights w, Assemble(config, read));
    if (any_view) w.backing = ckpt;
    return w;
  } catch (const std::exception& e) {
    return InternalError(ckpt->dir() + ": loading weights failed: " + e.what());
  }
}

StatusOr<LladaWeights> LoadLladaWeightsFromSegment(const checkpoint::LladaConfig& config,
                                                   std::shared_ptr<const weights::AttachedModel> segment,
                                                   const ModelOptions& options) {
  UNMASK_ASSIGN_OR_RETURN(at::Device device, ParseDevice(options.device));
  const at::ScalarType compute = ToScalarType(options.precision);
  bool any_view = false;
  // The loader's copy of the data region on this GPU (CUDA IPC), when the executor opened one.
  const std::uint8_t* region =
      device.is_cuda() ? segment->device_region(device.has_index() ? device.index() : 0) : nullptr;
  auto on_device = [&](std::uint64_t offset) { return region == nullptr ? nullptr : region + offset; };
  // A map, not a scan per tensor: a MoE model has tens of thousands of tensors.
  std::unordered_map<std::string, std::vector<std::int64_t>> expected_shapes;
  for (auto& expected : checkpoint::ExpectedTensors(config)) expected_shapes[expected.name] = std::move(expected.shape);
  auto check_shape = [&](const weights::TensorView& v, const std::string& name) -> Status {
    auto it = expected_shapes.find(name);
    if (it != expected_shapes.end() && it->second != v.shape())
      return DataLossError("segment " + segment->segment().name() + ": tensor '" + name +
                           "' does not have the shape config.json implies");
    return OkStatus();
  };
  auto read_as = [&](const std::string& name, at::ScalarType dtype, bool keep_stored) -> StatusOr<at::Tensor> {
    UNMASK_ASSIGN_OR_RETURN(weights::TensorView v, segment->Find(name));
    UNMASK_RETURN_IF_ERROR(check_shape(v, name));
    if (v.entry->quantized())
      return UnimplementedError("tensor '" + name + "' is quantized; only linear layers may be");
    return TensorOver(v.data, v.shape(), StoredScalarType(v.dtype()), dtype, device, any_view, keep_stored,
                      on_device(v.entry->offset));
  };
  WeightReaders read;
  read.dense = [&](const std::string& name, bool keep_stored) { return read_as(name, compute, keep_stored); };
  read.float32 = [&](const std::string& name) { return read_as(name, at::kFloat, false); };
  read.linear = [&](const std::string& name) -> StatusOr<Linear> {
    UNMASK_ASSIGN_OR_RETURN(weights::TensorView v, segment->Find(name));
    UNMASK_RETURN_IF_ERROR(check_shape(v, name));
    if (!v.entry->quantized()) {
      UNMASK_ASSIGN_OR_RETURN(at::Tensor t, read.dense(name, true));
      return Linear(t);
    }
    any_view = true;
    // On a GPU the packed bytes live there (views of the loader's allocation, or a copy of the
    // packed bytes) and each layer is dequantized there when it runs.
    if (!device.is_cpu()) return Linear::QuantizedTensors(v, compute, device, region, options.fused_kernels);
    return Linear::Quantized(v, compute);
  };
  try {
    UNMASK_ASSIGN_OR_RETURN(LladaWeights w, Assemble(config, read));
    if (any_view) w.backing = segment;
    return w;
  } catch (const std::exception& e) {
    return InternalError("segment " + segment->segment().name() + ": building weights failed: " + e.what());
  }
}

StatusOr<Precision> CheckpointPrecision(const std::string& dir) {
  // config.json first, as loading does: a directory that is no checkpoint is named by it.
  UNMASK_ASSIGN_OR_RETURN(auto config, checkpoint::LladaConfig::FromFile(dir + "/config.json"));
  UNMASK_ASSIGN_OR_RETURN(auto ckpt, checkpoint::Checkpoint::Open(dir));
  // The embedding table comes first in every architecture's tensor list.
  UNMASK_ASSIGN_OR_RETURN(checkpoint::TensorRef ref, ckpt->Find(checkpoint::ExpectedTensors(config).front().name));
  switch (ref.info->dtype) {
    case checkpoint::DType::kBF16: return Precision::kBFloat16;
    case checkpoint::DType::kF16: return Precision::kFloat16;
    default: return Precision::kFloat32;
  }
}

}  // namespace unmask::model
