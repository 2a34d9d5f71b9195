// The tensors of a LLaDA-family model, in the compute dtype and on the compute device. LLaDA-MoE
// and LLaDA2.x tensors (Hugging Face names) are mapped onto the same fields: their fused QKV is
// split by rows into q/k/v at load (views, no copy), their dense MLP layers fill ff_proj / up_proj /
// ff_out, and their MoE layers fill `moe` instead.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "common/checkpoint/checkpoint.h"
#include "common/checkpoint/llada_config.h"
#include "common/model/linear.h"
#include "common/model/moe.h"
#include "common/model/model_options.h"
#include "common/util/status.h"

namespace unmask::weights {
class AttachedModel;
}

namespace unmask::model {

struct LladaBlockWeights {
  at::Tensor attn_norm, ff_norm;  // [d_model]
  Linear q_proj, k_proj, v_proj, attn_out;
  Linear ff_proj, up_proj, ff_out;  // ff_proj is the SwiGLU gate (unset on MoE layers)
  at::Tensor q_norm, k_norm;        // [head_dim]: QK-norm weights, undefined when the model has none
  at::Tensor q_bias, k_bias, v_bias;  // q/k/v projection biases (Dream), undefined when none
  MoeWeights moe;                   // a MoE layer's block in place of the dense MLP; empty otherwise
};

struct LladaWeights {
  Linear wte;  // [embedding_size, d_model]: the table (Rows() looks ids up), quantized with ":emb"
  std::vector<LladaBlockWeights> blocks;
  at::Tensor ln_f;
  Linear lm_head;  // ff_out, or wte when weight_tying
  // Keeps mapped checkpoint memory alive when tensors are zero-copy views into it.
  std::shared_ptr<const void> backing;
};

// Reads every tensor of `ckpt` (validated against `config`) into the options' dtype and device.
// Tensors whose stored dtype already equals the compute dtype on CPU are zero-copy views into
// the mapped file.
StatusOr<LladaWeights> LoadLladaWeights(const checkpoint::LladaConfig& config,
                                        std::shared_ptr<const checkpoint::Checkpoint> ckpt,
                                        const ModelOptions& options);

// Builds the weights over a segment the loader holds: 16/32-bit tensors are zero-copy views into
// the shared memory when their dtype is the compute dtype on CPU (converted copies otherwise),
// quantized linear layers run from their packed bytes (see Linear). On a GPU whose copy of the
// data region the AttachedModel holds (CUDA IPC), tensors are views of that copy instead (or
// converted on the device); without one, they are copied to the device (quantized ones packed).
StatusOr<LladaWeights> LoadLladaWeightsFromSegment(const checkpoint::LladaConfig& config,
                                                   std::shared_ptr<const weights::AttachedModel> segment,
                                                   const ModelOptions& options);

// What a checkpoint directory stores its weights in (the dtype of its embedding table), for
// ChooseCompute.
StatusOr<Precision> CheckpointPrecision(const std::string& dir);

}  // namespace unmask::model
