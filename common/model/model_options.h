// Options that choose how the engine computes (not what it computes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/util/status.h"

namespace unmask::model {

enum class Precision { kFloat32, kBFloat16, kFloat16 };

StatusOr<Precision> ParsePrecision(const std::string& text);  // "fp32" | "bf16" | "fp16"
// The --precision flag: "auto" (nullopt: ChooseCompute in cpu_features.h decides) or a precision.
StatusOr<std::optional<Precision>> ParsePrecisionFlag(const std::string& text);
// The storage type of weights a loader reports ("bf16", "fp16", "fp32", "int8", "int4:g64",
// "checkpoint"...): quantized and unknown ones count as bf16, the type they dequantize to.
Precision StoredPrecision(const std::string& loader_precision);
const char* PrecisionName(Precision p);

struct ModelOptions {
  Precision precision = Precision::kFloat32;
  // Why this precision (ChooseCompute's reason), for logs, GetCapacity and the metrics.
  std::string precision_why;
  // "cpu" or "cuda", "cuda:N".
  std::string device = "cpu";
  // > 0: attention is computed in chunks of this many query rows, so that the score matrix never
  // holds more than chunk x keys entries per head. 0: all queries at once.
  std::int64_t attention_query_chunk = 0;
  // On cuda, with a LibTorch built with CUDA: a generation's forwards that repeat (the same
  // segment shape, ids tensor and cache) are captured once as a CUDA graph and replayed
  // (cuda_graph_forward.h), so the host launches one graph instead of every layer's operators.
  bool cuda_graphs = false;
  // Wait for each generation step's forward to finish on the device before the sampler goes on,
  // so that GenerationResult::forward_seconds is the forward's whole time, device included, and
  // the rest of a generation's time is the sampler's (a profiling switch: costs one wait a step).
  bool time_forwards = false;
  // On cuda, in a build with the fused kernels (fused_ops.h): each layer's RMSNorm, rotary
  // embedding and SiLU product, and an int8/int4 layer's dequantization, as one kernel each
  // instead of ATen's several, the same bits.
  bool fused_kernels = false;
};

// A per-thread attention chunk for the forward passes this thread runs while the object lives
// (an executor job whose chunk the scheduler's memory clamp chose). The effective chunk is the
// smaller of this and ModelOptions::attention_query_chunk where both are set; 0 sets nothing.
// Scopes nest; each restores the previous value.
class ScopedAttentionChunk {
 public:
  explicit ScopedAttentionChunk(std::int64_t chunk);
  ~ScopedAttentionChunk();
  ScopedAttentionChunk(const ScopedAttentionChunk&) = delete;
  ScopedAttentionChunk& operator=(const ScopedAttentionChunk&) = delete;

  static std::int64_t Current();  // 0 when no scope is open on this thread
  // What a model configured with `configured` uses on this thread now.
  static std::int64_t Effective(std::int64_t configured);

 private:
  std::int64_t previous_;
};

}  // namespace unmask::model
