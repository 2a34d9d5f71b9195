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

}  // namespace unmask::model
