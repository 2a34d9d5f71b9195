// Which tensors of a LLaDA checkpoint are stored how: the precision spec a model is loaded
// with, and the per-tensor decision derived from it.
//
// Spec grammar: <precision>[:<option>]...   (case-insensitive)
//   precision  fp32 | bf16 | fp16 | int8 | int4   (also f32, float32, bfloat16, f16, float16, half)
//   g32|g64|g128   int4 group size along the input dimension (default g128)
//   sym|asym       int4 symmetric or with zero points (default asym; int8 is always symmetric)
//   prune=<r>      zero the fraction r in [0, 1) of smallest-magnitude weights of each block
//                  linear layer before storing it (default 0: off)
//   emb            int8/int4: quantize model.transformer.wte.weight as well
//   head           int8/int4: quantize the LM head model.transformer.ff_out.weight as well
// Defaults follow GPTQ/AWQ practice (group 128 with zero points). Examples: "bf16",
// "int8", "int4:g64:sym", "int4:g32:asym:head", "bf16:prune=0.5".
//
// With fp32/bf16/fp16 every tensor is stored in that dtype. With int8/int4 the linear layers
// of the blocks (q_proj, k_proj, v_proj, attn_out, ff_proj, up_proj, ff_out) are quantized and
// everything else (embedding, norms, LM head unless asked) is stored as bf16.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/checkpoint/dtype.h"
#include "common/util/status.h"

namespace unmask::weights {

enum class Precision { kFp32, kBf16, kFp16, kInt8, kInt4 };
const char* PrecisionName(Precision precision);
// The one parser of precision names (every flag and manifest field that names one goes through
// it): fp32 (f32, float32), bf16 (bfloat16), fp16 (f16, float16, half), int8, int4; any case.
// InvalidArgument "unknown precision '<name>' (expected fp32, bf16, fp16, int8 or int4)" otherwise.
StatusOr<Precision> ParsePrecisionName(const std::string& name);

enum class QuantScheme { kNone, kInt8PerChannel, kInt4Groupwise };
// "none", "int8_per_channel", "int4_groupwise" (the manifest spelling).
const char* QuantSchemeName(QuantScheme scheme);
StatusOr<QuantScheme> ParseQuantScheme(const std::string& name);

struct PrecisionSpec {
  Precision precision = Precision::kBf16;
  int group_size = 128;    // int4 only
  bool symmetric = false;  // int4 only
  double prune_ratio = 0.0;
  bool include_embeddings = false;
  bool include_lm_head = false;

  // InvalidArgument naming the spec and the offending part.
  static StatusOr<PrecisionSpec> Parse(const std::string& text);
  // Canonical spelling; Parse(ToString()) == *this.
  std::string ToString() const;
  bool quantized() const { return precision == Precision::kInt8 || precision == Precision::kInt4; }
  bool operator==(const PrecisionSpec& other) const;
  bool operator!=(const PrecisionSpec& other) const { return !(*this == other); }
};

// What a tensor is in the model, for the policy and for per-category byte totals.
enum class TensorRole { kEmbedding, kAttention, kMlp, kNorm, kLmHead, kOther };
const char* TensorRoleName(TensorRole role);
TensorRole ClassifyTensor(const std::string& name);

// How one tensor is stored in the segment.
struct TensorStorage {
  QuantScheme scheme = QuantScheme::kNone;
  checkpoint::DType dtype = checkpoint::DType::kBF16;  // element type of the main data
  int group_size = 0;                                  // int4
  bool symmetric = true;
  bool prune = false;
};

// The decision for tensor `name` of logical shape `shape` under `spec`. Only 2-D tensors are
// ever quantized.
TensorStorage StorageFor(const PrecisionSpec& spec, const std::string& name, const std::vector<std::int64_t>& shape);

// A quantized [rows, cols] layer is dequantized (common/model/linear.h) all at once, or, where it
// holds more than kMaxDequantScratchElements, in chunks of this many rows (at least one), so that
// the scratch of a quantized LM head (126464 x 4096 for LLaDA-8B: 1 GiB in bf16) is a fraction of
// it. The memory model (common/fitting) counts the same scratch.
inline constexpr std::int64_t kMaxDequantScratchElements = std::int64_t{64} << 20;
std::int64_t DequantChunkRows(std::int64_t rows, std::int64_t cols);

}  // namespace unmask::weights
