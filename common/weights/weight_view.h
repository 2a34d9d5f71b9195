// The attacher's side of the weight store: an executor maps a model's segment read-only and
// finds tensors by name. Tensors stay valid as long as the AttachedModel lives, even after the
// loader unlinked the segment's name.
#pragma once

#include <map>
#include <string>

#include "common/util/status.h"
#include "common/weights/manifest.h"
#include "common/weights/shm_segment.h"
#include "common/weights/tensor_view.h"

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

 private:
  ShmSegment segment_;
  Manifest manifest_;
  std::map<std::string, std::size_t> index_;
};

}  // namespace unmask::weights
