#include "common/model/torch_util.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <thread>

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

StatusOr<int> SetIntraOpThreads(int threads) {
  if (threads < 0) return InvalidArgumentError("intra-op threads must be >= 0 (0: one per core), got " + std::to_string(threads));
  const int n = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(n);
  return n;
}

}  // namespace unmask::model
