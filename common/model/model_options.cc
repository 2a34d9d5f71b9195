#include "common/model/model_options.h"

namespace unmask::model {

StatusOr<Precision> ParsePrecision(const std::string& text) {
  if (text == "fp32" || text == "float32") return Precision::kFloat32;
  if (text == "bf16" || text == "bfloat16") return Precision::kBFloat16;
  if (text == "fp16" || text == "float16") return Precision::kFloat16;
  return InvalidArgumentError("precision '" + text + "' is not one of fp32, bf16, fp16");
}

const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFloat32: return "fp32";
    case Precision::kBFloat16: return "bf16";
    case Precision::kFloat16: return "fp16";
  }
  return "?";
}

namespace {
thread_local std::int64_t current_chunk = 0;
}  // namespace

ScopedAttentionChunk::ScopedAttentionChunk(std::int64_t chunk) : previous_(current_chunk) {
  if (chunk > 0) current_chunk = chunk;
}

ScopedAttentionChunk::~ScopedAttentionChunk() { current_chunk = previous_; }

std::int64_t ScopedAttentionChunk::Current() { return current_chunk; }

std::int64_t ScopedAttentionChunk::Effective(std::int64_t configured) {
  if (current_chunk <= 0) return configured;
  if (configured <= 0) return current_chunk;
  return current_chunk < configured ? current_chunk : configured;
}

}  // namespace unmask::model
