// fused_ops.h in a build without CUDA kernels: nothing applies, the callers compose ATen ops.
#include "common/model/fused_ops.h"

namespace unmask::model::fused {

bool Available() { return false; }
at::Tensor RmsNorm(const at::Tensor&, const at::Tensor&, double) { return {}; }
at::Tensor Rotary(const at::Tensor&, const at::Tensor&, const at::Tensor&) { return {}; }
at::Tensor SiluMul(const at::Tensor&, const at::Tensor&) { return {}; }
bool DequantizeInt8(const at::Tensor&, const at::Tensor&, const at::Tensor&) { return false; }
bool DequantizeInt4(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, std::int64_t) {
  return false;
}

}  // namespace unmask::model::fused
