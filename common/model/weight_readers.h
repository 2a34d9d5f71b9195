// How the weight assembly reads tensors, whatever stores them (a checkpoint directory, a shared
// segment): llada_weights.cc builds the readers for each store, and the assembly of each
// architecture (llada_weights.cc for dense LLaDA, moe_weights.cc for LLaDA-MoE and LLaDA2.x) asks
// them for tensors by name. Internal to common/model.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>

#include "common/checkpoint/llada_config.h"
#include "common/model/linear.h"
#include "common/model/llada_weights.h"
#include "common/util/status.h"

namespace unmask::model {

struct WeightReaders {
  // A tensor in the compute dtype. `keep_stored`: one the model may use in its storage type (a
  // linear layer's weight, the embedding table), so a bf16 store computed in fp32 on the CPU is
  // not copied (llada_weights.cc, TensorOver).
  std::function<StatusOr<at::Tensor>(const std::string& name, bool keep_stored)> dense;
  // A linear layer's weight: dense, or run from quantized bytes.
  std::function<StatusOr<Linear>(const std::string& name)> linear;
  // A tensor in float32 whatever the compute dtype (a router's expert bias and LLaDA2's router,
  // which the official code computes in float32).
  std::function<StatusOr<at::Tensor>(const std::string& name)> float32;
};

// The weights of a LLaDA-MoE or LLaDA2.x model under their official state_dict names.
StatusOr<LladaWeights> AssembleMoeFamily(const checkpoint::LladaConfig& config, const WeightReaders& read);

}  // namespace unmask::model
