// The seam between samplers and the network that predicts tokens for masked positions.
#pragma once

#include <ATen/core/Tensor.h>

#include "common/checkpoint/llada_config.h"

namespace unmask::model {

class ModelBackend {
 public:
  virtual ~ModelBackend() = default;

  // input_ids: [B, L] int64 on device(). attention_mask: [B, L] (nonzero = a real token that
  // others may attend to) or an undefined tensor for "all real". Returns logits [B, L, V] in the
  // compute dtype. Bidirectional: every position attends to every unmasked key.
  virtual at::Tensor Logits(const at::Tensor& input_ids, const at::Tensor& attention_mask) const = 0;

  virtual const checkpoint::LladaConfig& config() const = 0;
  virtual c10::Device device() const = 0;
};

}  // namespace unmask::model
