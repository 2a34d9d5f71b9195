// Options that choose how the engine computes (not what it computes).
#pragma once

#include <cstdint>
#include <string>

#include "common/util/status.h"

namespace unmask::model {

enum class Precision { kFloat32, kBFloat16, kFloat16 };

StatusOr<Precision> ParsePrecision(const std::string& text);  // "fp32" | "bf16" | "fp16"
const char* PrecisionName(Precision p);

struct ModelOptions {
  Precision precision = Precision::kFloat32;
  // "cpu" or "cuda", "cuda:N".
  std::string device = "cpu";
  // > 0: attention is computed in chunks of this many query rows, so that the score matrix never
  // holds more than chunk x keys entries per head. 0: all queries at once.
  std::int64_t attention_query_chunk = 0;
};

}  // namespace unmask::model
