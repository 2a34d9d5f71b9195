#include "common/model/torch_util.h"

#include <ATen/Context.h>

namespace unmask::model {

at::ScalarType ToScalarType(Precision p) {
  switch (p) {
    case Precision::kBFloat16: return at::kBFloat16;
    case Precision::kFloat16: return at::kHalf;
    case Precision::kFloat32: break;
  }
  return at::kFloat;
}

StatusOr<c10::Device> ParseDevice(const std::string& text) {
  try {
    c10::Device device(text);
    if (device.is_cuda() && !at::hasCUDA())
      return FailedPreconditionError("device '" + text + "': this build or machine has no CUDA");
    if (!device.is_cpu() && !device.is_cuda())
      return InvalidArgumentError("device '" + text + "': only cpu and cuda are supported");
    return device;
  } catch (const std::exception&) {
    return InvalidArgumentError("device '" + text + "' is not a device name (cpu, cuda, cuda:N)");
  }
}

}  // namespace unmask::model
