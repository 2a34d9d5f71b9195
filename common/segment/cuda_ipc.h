// Sharing a model's weights between processes on one GPU with CUDA IPC.
//
// The owner (the loader) copies a model's data region into one device allocation and exports
// it (cudaIpcGetMemHandle); the handle travels as text (hex of the cudaIpcMemHandle_t bytes,
// with the device and the size) next to the manifest, whose per-tensor offsets are relative to
// the data region and therefore index the device allocation directly. An attacher (an
// executor) opens the handle (cudaIpcOpenMemHandle) and reads tensors at base + offset, with no
// copy of its own. The allocation lives as long as the owner's DeviceExport; the owner must
// outlive its importers' use of it (CUDA requires it).
//
// Plain C++ over the CUDA runtime API (no kernels). Built only with UNMASK_CUDA_IPC (the CUDA
// toolkit was found); otherwise every call that needs CUDA answers Unimplemented. Errors name
// the CUDA call and cudaGetErrorString's text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/util/status.h"
#include "common/segment/manifest.h"

namespace unmask::weights::cuda {

// Whether this build has CUDA IPC compiled in.
bool CompiledIn();
// cudaGetDeviceCount: 0 devices is a value, a failing runtime (no driver, no device) an error
// naming it. Unimplemented when not compiled in.
StatusOr<int> DeviceCount();

// cudaMemGetInfo on `device`: what the loader may still place there.
struct DeviceMemory {
  std::uint64_t free_bytes = 0;
  std::uint64_t total_bytes = 0;
};
StatusOr<DeviceMemory> MemoryInfo(int device);

inline constexpr std::size_t kIpcHandleBytes = 64;  // sizeof(cudaIpcMemHandle_t)

// What an importer needs: the device, the allocation's size and the exported handle.
// Text form: "cuda-ipc:v1:<device>:<bytes>:<128 hex digits>".
struct IpcDescriptor {
  int device = 0;
  std::uint64_t bytes = 0;
  std::string handle_hex;  // 2 * kIpcHandleBytes lowercase hex digits

  std::string ToString() const;
  // InvalidArgument naming the part that is wrong.
  static StatusOr<IpcDescriptor> Parse(const std::string& text);
};

std::string BytesToHex(const void* data, std::size_t n);
// Exactly `n` bytes from 2n hex digits; InvalidArgument otherwise.
Status HexToBytes(const std::string& hex, void* out, std::size_t n);

// The owner's side: one device allocation holding a copy of host bytes, exported for IPC.
class DeviceExport {
 public:
  // cudaMalloc(bytes) on `device`, copies `data` in chunks of `chunk_bytes`, exports the handle.
  static StatusOr<DeviceExport> FromHost(int device, const std::uint8_t* data, std::size_t bytes,
                                         std::size_t chunk_bytes = std::size_t{64} << 20);

  DeviceExport() = default;
  DeviceExport(DeviceExport&& other) noexcept;
  DeviceExport& operator=(DeviceExport&& other) noexcept;
  DeviceExport(const DeviceExport&) = delete;
  DeviceExport& operator=(const DeviceExport&) = delete;
  ~DeviceExport();  // cudaFree

  const IpcDescriptor& descriptor() const { return descriptor_; }
  void* device_ptr() const { return ptr_; }

 private:
  void Reset();
  void* ptr_ = nullptr;
  IpcDescriptor descriptor_;
};

// The importer's side: the owner's allocation opened in this process.
class DeviceImport {
 public:
  // cudaIpcOpenMemHandle on descriptor.device. Must be another process than the exporter's.
  static StatusOr<DeviceImport> Open(const IpcDescriptor& descriptor);

  DeviceImport() = default;
  DeviceImport(DeviceImport&& other) noexcept;
  DeviceImport& operator=(DeviceImport&& other) noexcept;
  DeviceImport(const DeviceImport&) = delete;
  DeviceImport& operator=(const DeviceImport&) = delete;
  ~DeviceImport();  // cudaIpcCloseMemHandle

  const std::uint8_t* device_ptr() const { return static_cast<const std::uint8_t*>(ptr_); }
  std::uint64_t size() const { return bytes_; }
  int device() const { return device_; }
  // Device address of a tensor's main data (the manifest's offsets index the allocation);
  // OutOfRange naming the tensor when it does not lie inside the allocation.
  StatusOr<const std::uint8_t*> TensorData(const TensorEntry& entry) const;
  // cudaMemcpy of [offset, offset + n) to host memory (for checks and tests).
  Status CopyToHost(std::uint64_t offset, void* dst, std::size_t n) const;

 private:
  void Reset();
  void* ptr_ = nullptr;
  std::uint64_t bytes_ = 0;
  int device_ = 0;
};

}  // namespace unmask::weights::cuda
