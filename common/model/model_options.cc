#include "common/model/model_options.h"

#include "common/quant/quant_policy.h"

namespace unmask::model {

StatusOr<Precision> ParsePrecision(const std::string& text) {
  auto name = weights::ParsePrecisionName(text);  // the one parser of precision names
  if (name.ok() && *name == weights::Precision::kFp32) return Precision::kFloat32;
  if (name.ok() && *name == weights::Precision::kBf16) return Precision::kBFloat16;
  if (name.ok() && *name == weights::Precision::kFp16) return Precision::kFloat16;
  return InvalidArgumentError("precision '" + text + "' is not one of fp32, bf16, fp16");
}

StatusOr<std::optional<Precision>> ParsePrecisionFlag(const std::string& text) {
  if (text == "auto") return std::optional<Precision>();
  auto p = ParsePrecision(text);
  if (!p.ok()) return InvalidArgumentError("precision '" + text + "' is not one of auto, fp32, bf16, fp16");
  return std::optional<Precision>(*p);
}

Precision StoredPrecision(const std::string& loader_precision) {
  auto p = ParsePrecision(loader_precision);
  return p.ok() ? *p : Precision::kBFloat16;  // quantized (int8, int4:g64) and unknown: dequantized to bf16
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
