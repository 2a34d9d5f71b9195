// The LLaDA transformer (mask predictor): bidirectional attention with RoPE, grouped KV heads,
// SwiGLU MLP, RMSNorm, computed in float32, bfloat16 or float16. The same class computes the
// mixture-of-experts members of the family (config().architecture): LLaDA-MoE (QK-norm, partial
// RoPE, MoE blocks with a shared expert) and LLaDA2.x (also fused QKV, an explicit head_dim and,
// through PackedSegment::causal_block, block-causal attention), so that every sampler and service
// takes them unchanged.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "common/checkpoint/llada_config.h"
#include "common/model/kv_cache.h"
#include "common/model/layers.h"
#include "common/model/llada_weights.h"
#include "common/model/model_backend.h"
#include "common/model/model_options.h"
#include "common/model/packed_segment.h"
#include "common/util/status.h"

namespace unmask::model {

class LladaModel : public ModelBackend {
 public:
  // Opens a Hugging Face checkpoint directory (config.json + safetensors); every error names
  // the file and, where there is one, the tensor.
  static StatusOr<std::unique_ptr<LladaModel>> Load(const std::string& dir, const ModelOptions& options);
  // Builds the model over a weight segment that the loader holds (see common/segment and common/registry); the
  // config comes from the segment's manifest.
  static StatusOr<std::unique_ptr<LladaModel>> FromSegment(std::shared_ptr<const weights::AttachedModel> segment,
                                                           const ModelOptions& options);
  LladaModel(checkpoint::LladaConfig config, LladaWeights weights, ModelOptions options, c10::Device device);

  at::Tensor Logits(const at::Tensor& input_ids, const at::Tensor& attention_mask) const override;
  const checkpoint::LladaConfig& config() const override { return config_; }
  c10::Device device() const override { return device_; }

  // Final hidden states before ln_f: [B, L, d_model].
  at::Tensor Hidden(const at::Tensor& input_ids, const at::Tensor& attention_mask) const;
  // ln_f + LM head over hidden rows: [..., d_model] -> [..., V].
  at::Tensor HeadLogits(const at::Tensor& hidden) const;

  // Hidden() with the same operations (so the same result, bit for bit) that also stores every
  // layer's K/V (after RoPE) and the key-padding bias into *cache, replacing what it held.
  at::Tensor HiddenFillCache(const at::Tensor& input_ids, const at::Tensor& attention_mask, KvCache* cache) const;
  // Runs only `segment_ids` ([B, T]), the tokens at absolute positions [offset, offset + T) of
  // the sequence *cache was filled from: RoPE at those positions, queries attending to the
  // segment's own new K/V and to the cached K/V of every other position (under the cached
  // attention mask). Writes the segment's new K/V into the cache at [offset, offset + T).
  // Returns hidden states before ln_f, [B, T, d_model]. When the segment's tokens and the rest of
  // the sequence are what the cache was filled with, the result equals
  // Hidden(full).narrow(1, offset, T) up to floating-point rounding.
  at::Tensor HiddenSegment(const at::Tensor& segment_ids, std::int64_t offset, KvCache* cache) const;
  // The hidden states (before ln_f) of many segments in one pass, [R, T, d_model] each
  // (packed_segment.h): row-wise operations over all rows at once, attention per segment.
  // Hidden, HiddenFillCache and HiddenSegment are this with one segment.
  std::vector<at::Tensor> HiddenPacked(const std::vector<PackedSegment>& segments) const;
  // HiddenPacked in two halves, for CUDA graph capture (cuda_graph_forward.h): PlanForward does
  // the host-side work (checks, the plan, the rotary rows copied to the device) and RunForward
  // only launches device work, reading the plan's tensors. A plan holds the segments' tensors
  // (not copies): RunForward reads whatever they hold when it runs.
  struct ForwardPlan;
  std::shared_ptr<const ForwardPlan> PlanForward(const std::vector<PackedSegment>& segments) const;
  std::vector<at::Tensor> RunForward(const ForwardPlan& plan) const;

  const ModelOptions& options() const { return options_; }
  const LladaWeights& weights() const { return weights_; }
  at::ScalarType compute_dtype() const;

 private:
  at::Tensor Embed(const at::Tensor& ids) const;
  struct SegmentPlan;
  struct PackedRotary;
  std::vector<SegmentPlan> PlanSegments(const std::vector<PackedSegment>& segments) const;
  PackedRotary RotaryRows(const std::vector<PackedSegment>& segments, const std::vector<SegmentPlan>& plans) const;
  // q or k rows [N, heads, head_dim] rotated by their rows of `rope` (all dims, or the first
  // rotary_dim of each head); unchanged without rotary dims.
  at::Tensor RotateRows(const at::Tensor& x, const PackedRotary& rope) const;
  // RmsNorm and the SwiGLU product (layers.h), through fused_ops.h where options_.fused_kernels.
  at::Tensor Norm(const at::Tensor& x, const at::Tensor& weight) const;
  at::Tensor SiluTimes(const at::Tensor& gate, const at::Tensor& up) const;
  at::Tensor SegmentAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const PackedSegment& seg,
                              const SegmentPlan& plan, std::size_t layer) const;
  at::Tensor PackedBlock(const LladaBlockWeights& blk, const at::Tensor& x, const std::vector<PackedSegment>& segments,
                         const std::vector<SegmentPlan>& plans, const PackedRotary& rope, std::size_t layer) const;

  checkpoint::LladaConfig config_;
  LladaWeights weights_;
  ModelOptions options_;
  c10::Device device_;
  RotaryTables rope_;  // positions [0, max_sequence_length), computed once
};

}  // namespace unmask::model
