// The attacher's side of the weight store: an executor maps a model's segment read-only and
// finds tensors by name. Tensors stay valid as long as the AttachedModel lives, even after the
// loader unlinked the segment's name.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/util/status.h"
#include "common/segment/manifest.h"
#include "common/segment/shm_segment.h"
#include "common/segment/tensor_view.h"

namespace unmask::weights {

class AttachedModel {
 public:
  // Maps the segment read-only and parses its manifest. NotFound for an unknown name,
  // Unavailable while the loader is still writing it, DataLoss for a corrupt segment.
  static StatusOr<AttachedModel> Attach(const std::string& segment_name);
  // Wraps an already mapped segment (read-only or the writer's own).
  static StatusOr<AttachedModel> FromSegment(ShmSegment segment);

  const Manifest& manifest() const { return manifest_; }
  const ShmSegment& segment() const { return segment_; }
  const std::string& model_id() const { return manifest_.model_id; }
  const std::uint8_t* data_region() const { return segment_.data() + manifest_.data_offset; }

  // NotFound naming the tensor and the segment when absent.
  StatusOr<TensorView> Find(const std::string& name) const;

  // The same data region in GPU memory (the loader's CUDA IPC allocation, opened by this
  // process), for a model computed on that GPU; `owner` keeps it open. Set before sharing the
  // AttachedModel. InvalidArgument when `bytes` is smaller than the manifest's data region.
  Status SetDeviceRegion(int cuda_device, const std::uint8_t* base, std::uint64_t bytes, std::string handle,
                         std::shared_ptr<const void> owner);
  // The data region on cuda:`cuda_device`, or null when this process has no copy there.
  const std::uint8_t* device_region(int cuda_device) const {
    return device_base_ != nullptr && cuda_device == device_index_ ? device_base_ : nullptr;
  }
  // The descriptor the device region was opened from ("" when none).
  const std::string& device_handle() const { return device_handle_; }

 private:
  ShmSegment segment_;
  Manifest manifest_;
  const std::uint8_t* device_base_ = nullptr;
  int device_index_ = -1;
  std::string device_handle_;
  std::shared_ptr<const void> device_owner_;
  std::map<std::string, std::size_t> index_;
};

}  // namespace unmask::weights
