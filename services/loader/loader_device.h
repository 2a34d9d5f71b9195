// Where the loader keeps the weights it lends.
//
//   cpu      the POSIX shm segment only; executors (on CPU, or on a GPU, copying what they need)
//            map it.
//   cuda:N   the shm segment plus one allocation per model on GPU N holding the segment's data
//            region, exported with CUDA IPC: executors on that GPU open it and compute from it
//            without a copy of their own (the manifest's offsets index it). The shm segment
//            stays (CPU executors, adoption by a restarted loader, which exports anew).
#pragma once

#include <string>

#include "common/util/status.h"
#include "common/registry/device_budget.h"
#include "common/registry/progressive_loader.h"

namespace unmask::loader {

struct LoaderDevice {
  bool cuda = false;
  int index = 0;
  std::string ToString() const { return cuda ? "cuda:" + std::to_string(index) : "cpu"; }
};

// "cpu", "cuda" (= cuda:0) or "cuda:N"; InvalidArgument naming the text otherwise.
StatusOr<LoaderDevice> ParseLoaderDevice(const std::string& text);

// For cuda: this build has CUDA IPC and GPU N exists; FailedPrecondition naming the device and
// the CUDA error otherwise. OK for cpu.
Status CheckDeviceUsable(const LoaderDevice& device);

// The memory the loader sees on the device: for cuda, cudaMemGetInfo's free bytes.
StatusOr<weights::DeviceBudget> DeviceBudgetFor(const LoaderDevice& device);

// Copies `model`'s data region to the device and exports it (sets model.device_copy).
// ResourceExhausted naming the model and the device when it does not fit the device's free
// memory; nothing to do for cpu.
Status PublishToDevice(const LoaderDevice& device, weights::LoadedModel& model);

}  // namespace unmask::loader
