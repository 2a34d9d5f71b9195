#include "common/segment/weight_view.h"

#include "common/segment/segment_format.h"

namespace unmask::weights {

StatusOr<AttachedModel> AttachedModel::Attach(const std::string& segment_name) {
  UNMASK_ASSIGN_OR_RETURN(ShmSegment segment, ShmSegment::OpenReadOnly(segment_name));
  return FromSegment(std::move(segment));
}

StatusOr<AttachedModel> AttachedModel::FromSegment(ShmSegment segment) {
  if (!segment.valid()) return InvalidArgumentError("AttachedModel: segment is not mapped");
  UNMASK_ASSIGN_OR_RETURN(Manifest manifest, ReadSegmentManifest(segment.data(), segment.size(), segment.name()));
  AttachedModel model;
  model.segment_ = std::move(segment);
  model.manifest_ = std::move(manifest);
  for (std::size_t i = 0; i < model.manifest_.tensors.size(); ++i) model.index_[model.manifest_.tensors[i].name] = i;
  return model;
}

StatusOr<TensorView> AttachedModel::Find(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    return NotFoundError("segment '" + segment_.name() + "' (model '" + manifest_.model_id + "'): no tensor '" + name +
                         "'");
  }
  return MakeTensorView(manifest_.tensors[it->second], data_region());
}

Status AttachedModel::SetDeviceRegion(int cuda_device, const std::uint8_t* base, std::uint64_t bytes,
                                      std::string handle, std::shared_ptr<const void> owner) {
  if (base == nullptr || bytes < manifest_.totals.data_bytes) {
    return InvalidArgumentError("segment '" + segment_.name() + "': the device copy on cuda:" +
                                std::to_string(cuda_device) + " has " + std::to_string(bytes) +
                                " bytes, the data region " + std::to_string(manifest_.totals.data_bytes));
  }
  device_base_ = base;
  device_index_ = cuda_device;
  device_handle_ = std::move(handle);
  device_owner_ = std::move(owner);
  return OkStatus();
}

}  // namespace unmask::weights
