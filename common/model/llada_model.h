// The LLaDA transformer (mask predictor): bidirectional attention with RoPE, grouped KV heads,
// SwiGLU MLP, RMSNorm, computed in float32, bfloat16 or float16.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>

#include "common/checkpoint/llada_config.h"
#include "common/model/llada_weights.h"
#include "common/model/model_backend.h"
#include "common/model/model_options.h"
#include "common/util/status.h"

namespace unmask::model {

class LladaModel : public ModelBackend {
 public:
  // Opens a Hugging Face checkpoint directory (config.json + safetensors); every error names
  // the file and, where there is one, the tensor.
  static StatusOr<std::unique_ptr<LladaModel>> Load(const std::string& dir, const ModelOptions& options);
  LladaModel(checkpoint::LladaConfig config, LladaWeights weights, ModelOptions options, c10::Device device);

  at::Tensor Logits(const at::Tensor& input_ids, const at::Tensor& attention_mask) const override;
  const checkpoint::LladaConfig& config() const override { return config_; }
  c10::Device device() const override { return device_; }

  // Final hidden states before ln_f: [B, L, d_model].
  at::Tensor Hidden(const at::Tensor& input_ids, const at::Tensor& attention_mask) const;
  // ln_f + LM head over hidden rows: [..., d_model] -> [..., V].
  at::Tensor HeadLogits(const at::Tensor& hidden) const;

  const ModelOptions& options() const { return options_; }
  const LladaWeights& weights() const { return weights_; }
  at::ScalarType compute_dtype() const;

 private:
  at::Tensor Block(const LladaBlockWeights& blk, const at::Tensor& x, const struct RotaryTables& rope,
                   const at::Tensor& key_bias) const;

  checkpoint::LladaConfig config_;
  LladaWeights weights_;
  ModelOptions options_;
  c10::Device device_;
};

}  // namespace unmask::model
