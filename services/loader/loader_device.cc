#include "services/loader/loader_device.h"

#include <cstdlib>

#include "common/segment/cuda_ipc.h"

namespace unmask::loader {

StatusOr<LoaderDevice> ParseLoaderDevice(const std::string& text) {
  LoaderDevice d;
  if (text == "cpu") return d;
  const auto bad = [&] {
    return InvalidArgumentError("device '" + text + "': expected cpu, cuda or cuda:N");
  };
  if (text.rfind("cuda", 0) != 0) return bad();
  d.cuda = true;
  if (text.size() == 4) return d;
  if (text[4] != ':' || text.size() == 5 || text.size() > 9) return bad();
  for (std::size_t i = 5; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return bad();
  }
  d.index = std::atoi(text.c_str() + 5);
  return d;
}

Status CheckDeviceUsable(const LoaderDevice& device) {
  if (!device.cuda) return OkStatus();
  auto count = weights::cuda::DeviceCount();
  if (!count.ok())
    return FailedPreconditionError("device " + device.ToString() + " is not usable: " + count.status().message());
  if (device.index >= *count)
    return FailedPreconditionError("device " + device.ToString() + " does not exist: this machine has " +
                                   std::to_string(*count) + " CUDA device(s)");
  return OkStatus();
}

StatusOr<weights::DeviceBudget> DeviceBudgetFor(const LoaderDevice& device) {
  if (!device.cuda) return weights::DeviceBudget::ForCpu();
  UNMASK_ASSIGN_OR_RETURN(weights::cuda::DeviceMemory memory, weights::cuda::MemoryInfo(device.index));
  return weights::DeviceBudget(memory.free_bytes, device.ToString() + " free (cudaMemGetInfo)");
}

Status PublishToDevice(const LoaderDevice& device, weights::LoadedModel& model) {
  if (!device.cuda) return OkStatus();
  const std::uint64_t bytes = model.manifest.totals.data_bytes;
  const std::string what = "model '" + model.manifest.model_id + "' on " + device.ToString();
  UNMASK_ASSIGN_OR_RETURN(weights::DeviceBudget budget, DeviceBudgetFor(device));
  UNMASK_RETURN_IF_ERROR(budget.CheckFits(bytes, 0, what));
  auto exported = weights::cuda::DeviceExport::FromHost(device.index, model.segment.data() + model.manifest.data_offset,
                                                        bytes);
  if (!exported.ok()) return exported.status().WithContext(what);
  auto owner = std::make_shared<weights::cuda::DeviceExport>(std::move(*exported));
  model.device_copy.device = device.ToString();
  model.device_copy.handle = owner->descriptor().ToString();
  model.device_copy.bytes = bytes;
  model.device_copy.memory = std::move(owner);
  return OkStatus();
}

}  // namespace unmask::loader
