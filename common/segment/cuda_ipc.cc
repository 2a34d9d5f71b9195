#include "common/segment/cuda_ipc.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#ifndef UNMASK_CUDA_IPC
#define UNMASK_CUDA_IPC 0
#endif
#if UNMASK_CUDA_IPC
#include <cuda_runtime_api.h>
#endif

namespace unmask::weights::cuda {

namespace {

constexpr char kPrefix[] = "cuda-ipc:v1:";

#if UNMASK_CUDA_IPC
static_assert(sizeof(cudaIpcMemHandle_t) == kIpcHandleBytes, "cudaIpcMemHandle_t changed size");

Status CudaError(const char* call, cudaError_t err, const std::string& what) {
  return InternalError(std::string(call) + " failed for " + what + ": " + cudaGetErrorName(err) + " (" +
                       cudaGetErrorString(err) + ")");
}
// Returns the error naming the call; cudaGetLastError resets the runtime's last-error state so
// that a failed call does not show up again in the next check.
#define UNMASK_CUDA_RETURN_IF_ERROR(call, what)         \
  do {                                                  \
    const cudaError_t unmask_cuda_err = (call);         \
    if (unmask_cuda_err != cudaSuccess) {               \
      (void)cudaGetLastError();                         \
      return CudaError(#call, unmask_cuda_err, (what)); \
    }                                                   \
  } while (0)
#else
Status NotCompiledIn(const std::string& what) {
  return UnimplementedError(what + ": this build has no CUDA IPC (the CUDA toolkit was not found at configure time)");
}
#endif

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool CompiledIn() { return UNMASK_CUDA_IPC != 0; }

std::string BytesToHex(const void* data, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::string s(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    s[2 * i] = kDigits[p[i] >> 4];
    s[2 * i + 1] = kDigits[p[i] & 15];
  }
  return s;
}

Status HexToBytes(const std::string& hex, void* out, std::size_t n) {
  if (hex.size() != 2 * n)
    return InvalidArgumentError("hex: " + std::to_string(hex.size()) + " digits, expected " + std::to_string(2 * n));
  auto* p = static_cast<std::uint8_t*>(out);
  for (std::size_t i = 0; i < n; ++i) {
    const int hi = HexDigit(hex[2 * i]), lo = HexDigit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return InvalidArgumentError("hex: not a hex digit at position " + std::to_string(2 * i));
    p[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return OkStatus();
}

std::string IpcDescriptor::ToString() const {
  return kPrefix + std::to_string(device) + ":" + std::to_string(bytes) + ":" + handle_hex;
}

StatusOr<IpcDescriptor> IpcDescriptor::Parse(const std::string& text) {
  auto bad = [&](const std::string& why) { return InvalidArgumentError("CUDA IPC descriptor '" + text + "': " + why); };
  if (text.compare(0, sizeof(kPrefix) - 1, kPrefix) != 0) return bad("does not start with '" + std::string(kPrefix) + "'");
  const std::size_t a = sizeof(kPrefix) - 1;
  const std::size_t b = text.find(':', a);
  const std::size_t c = b == std::string::npos ? b : text.find(':', b + 1);
  if (c == std::string::npos) return bad("expected <device>:<bytes>:<handle>");
  auto number = [](const std::string& s, std::uint64_t* out) {
    if (s.empty() || s.size() > 19) return false;
    for (char ch : s) {
      if (ch < '0' || ch > '9') return false;
    }
    *out = std::strtoull(s.c_str(), nullptr, 10);
    return true;
  };
  IpcDescriptor d;
  std::uint64_t device = 0;
  if (!number(text.substr(a, b - a), &device) || device > 1024) return bad("device is not a small number");
  if (!number(text.substr(b + 1, c - b - 1), &d.bytes) || d.bytes == 0) return bad("bytes is not a positive number");
  d.device = static_cast<int>(device);
  d.handle_hex = text.substr(c + 1);
  std::uint8_t handle[kIpcHandleBytes];
  if (Status s = HexToBytes(d.handle_hex, handle, sizeof(handle)); !s.ok()) return bad("handle " + s.message());
  return d;
}

StatusOr<int> DeviceCount() {
#if UNMASK_CUDA_IPC
  int n = 0;
  UNMASK_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&n), "the CUDA devices of this machine");
  return n;
#else
  return NotCompiledIn("counting CUDA devices");
#endif
}

StatusOr<DeviceMemory> MemoryInfo(int device) {
#if UNMASK_CUDA_IPC
  const std::string what = "cuda:" + std::to_string(device);
  UNMASK_CUDA_RETURN_IF_ERROR(cudaSetDevice(device), what);
  std::size_t free_bytes = 0, total_bytes = 0;
  UNMASK_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes), what);
  return DeviceMemory{free_bytes, total_bytes};
#else
  return NotCompiledIn("the memory of cuda:" + std::to_string(device));
#endif
}

// ---- DeviceExport ----

StatusOr<DeviceExport> DeviceExport::FromHost(int device, const std::uint8_t* data, std::size_t bytes,
                                              std::size_t chunk_bytes) {
  const std::string what = std::to_string(bytes) + " bytes on cuda:" + std::to_string(device);
  if (bytes == 0 || data == nullptr) return InvalidArgumentError("CUDA IPC export: nothing to copy");
  if (chunk_bytes == 0) return InvalidArgumentError("CUDA IPC export: chunk size must be positive");
#if UNMASK_CUDA_IPC
  UNMASK_CUDA_RETURN_IF_ERROR(cudaSetDevice(device), what);
  DeviceExport out;
  UNMASK_CUDA_RETURN_IF_ERROR(cudaMalloc(&out.ptr_, bytes), what);  // out frees it on any return below
  out.descriptor_.device = device;
  out.descriptor_.bytes = bytes;
  auto* dst = static_cast<std::uint8_t*>(out.ptr_);
  for (std::size_t done = 0; done < bytes; done += chunk_bytes) {
    const std::size_t n = std::min(chunk_bytes, bytes - done);
    UNMASK_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst + done, data + done, n, cudaMemcpyHostToDevice),
                                what + " (chunk at byte " + std::to_string(done) + ")");
  }
  cudaIpcMemHandle_t handle;
  UNMASK_CUDA_RETURN_IF_ERROR(cudaIpcGetMemHandle(&handle, out.ptr_), what);
  out.descriptor_.handle_hex = BytesToHex(&handle, sizeof(handle));
  return out;
#else
  (void)device;
  return NotCompiledIn("CUDA IPC export of " + what);
#endif
}

DeviceExport::DeviceExport(DeviceExport&& other) noexcept { *this = std::move(other); }

DeviceExport& DeviceExport::operator=(DeviceExport&& other) noexcept {
  if (this != &other) {
    Reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    descriptor_ = std::move(other.descriptor_);
  }
  return *this;
}

DeviceExport::~DeviceExport() { Reset(); }

void DeviceExport::Reset() {
#if UNMASK_CUDA_IPC
  if (ptr_ != nullptr && cudaSetDevice(descriptor_.device) == cudaSuccess) (void)cudaFree(ptr_);
#endif
  ptr_ = nullptr;
}

// ---- DeviceImport ----

StatusOr<DeviceImport> DeviceImport::Open(const IpcDescriptor& descriptor) {
  const std::string what = "handle of " + std::to_string(descriptor.bytes) + " bytes on cuda:" +
                           std::to_string(descriptor.device);
#if UNMASK_CUDA_IPC
  cudaIpcMemHandle_t handle;
  UNMASK_RETURN_IF_ERROR(HexToBytes(descriptor.handle_hex, &handle, sizeof(handle)));
  UNMASK_CUDA_RETURN_IF_ERROR(cudaSetDevice(descriptor.device), what);
  DeviceImport out;
  UNMASK_CUDA_RETURN_IF_ERROR(cudaIpcOpenMemHandle(&out.ptr_, handle, cudaIpcMemLazyEnablePeerAccess), what);
  out.bytes_ = descriptor.bytes;
  out.device_ = descriptor.device;
  return out;
#else
  return NotCompiledIn("CUDA IPC import of a " + what);
#endif
}

DeviceImport::DeviceImport(DeviceImport&& other) noexcept { *this = std::move(other); }

DeviceImport& DeviceImport::operator=(DeviceImport&& other) noexcept {
  if (this != &other) {
    Reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = other.bytes_;
    device_ = other.device_;
  }
  return *this;
}

DeviceImport::~DeviceImport() { Reset(); }

void DeviceImport::Reset() {
#if UNMASK_CUDA_IPC
  if (ptr_ != nullptr && cudaSetDevice(device_) == cudaSuccess) (void)cudaIpcCloseMemHandle(ptr_);
#endif
  ptr_ = nullptr;
}

StatusOr<const std::uint8_t*> DeviceImport::TensorData(const TensorEntry& entry) const {
  if (entry.offset > bytes_ || entry.nbytes > bytes_ - entry.offset) {
    return OutOfRangeError("tensor '" + entry.name + "' [" + std::to_string(entry.offset) + ", +" +
                           std::to_string(entry.nbytes) + ") lies outside the device allocation of " +
                           std::to_string(bytes_) + " bytes");
  }
  return device_ptr() + entry.offset;
}

Status DeviceImport::CopyToHost(std::uint64_t offset, void* dst, std::size_t n) const {
  if (offset > bytes_ || n > bytes_ - offset)
    return OutOfRangeError("copy of [" + std::to_string(offset) + ", +" + std::to_string(n) +
                           ") outside the device allocation of " + std::to_string(bytes_) + " bytes");
#if UNMASK_CUDA_IPC
  UNMASK_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "the imported allocation");
  UNMASK_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, device_ptr() + offset, n, cudaMemcpyDeviceToHost),
                              std::to_string(n) + " bytes at offset " + std::to_string(offset));
  return OkStatus();
#else
  (void)dst;
  return NotCompiledIn("copying from an imported allocation");
#endif
}

}  // namespace unmask::weights::cuda
