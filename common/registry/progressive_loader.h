// Loading a checkpoint into a shared-memory weight segment, tensor by tensor.
//
// Order of work: validate the checkpoint against config.json, plan the whole layout (sizes
// follow from shapes and the precision spec), create the segment once at its final size, then
// stream every tensor from the mapped shards straight into the segment (converting or
// quantizing in bounded row chunks) and drop the source pages behind it. Peak RSS is therefore
// the segment plus one chunk of f32 scratch plus one chunk of source pages, not the checkpoint
// plus the segment. Any failure or cancellation unlinks the segment before returning.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/checkpoint/checkpoint.h"
#include "common/checkpoint/llada_config.h"
#include "common/util/status.h"
#include "common/segment/manifest.h"
#include "common/quant/quant_policy.h"
#include "common/segment/shm_segment.h"

namespace unmask::weights {

enum class LoadPhase { kValidating, kPlanning, kStreaming, kPublishing, kDone };
const char* LoadPhaseName(LoadPhase phase);

struct LoadProgress {
  LoadPhase phase = LoadPhase::kValidating;
  std::int64_t tensors_done = 0;
  std::int64_t tensors_total = 0;
  std::uint64_t bytes_done = 0;   // checkpoint bytes read so far
  std::uint64_t bytes_total = 0;  // checkpoint bytes of all tensors to load
  std::string current_tensor;     // the tensor about to be streamed (kStreaming)
};

// Called at every phase change and before every tensor. Returning false cancels the load,
// which then fails with Cancelled and leaves no segment behind.
using LoadProgressFn = std::function<bool(const LoadProgress&)>;

struct LoadOptions {
  std::string segment_name;  // empty: ShmSegment::MakeName(model_id)
  mode_t segment_mode = 0600;
  std::int64_t chunk_elems = std::int64_t{4} << 20;  // f32 scratch per chunk (16 MiB)
  bool drop_source_pages = true;
};

// The data region of a loaded model copied into GPU memory and exported for other processes
// (CUDA IPC), when the loader serves executors on a GPU. `memory` owns the allocation: it is
// freed when the last holder of the model lets go.
struct DeviceCopy {
  std::string device;  // "cuda:N"
  std::string handle;  // what an executor opens (cuda::IpcDescriptor text)
  std::uint64_t bytes = 0;
  std::shared_ptr<void> memory;
};

// The writer's handle on a loaded model: the segment (mapped read-write) and its manifest.
struct LoadedModel {
  ShmSegment segment;
  Manifest manifest;
  DeviceCopy device_copy;  // empty (no handle) on CPU
};

// Loads `ckpt` into a new segment. Errors from validation are the checkpoint's own messages
// (they name the tensor and the shard file, or the checkpoint directory for a missing tensor).
StatusOr<LoadedModel> LoadIntoSegment(const checkpoint::Checkpoint& ckpt, const checkpoint::LladaConfig& config,
                                      const PrecisionSpec& spec, const std::string& model_id,
                                      const LoadProgressFn& progress = {}, const LoadOptions& options = {});

// Reads <dir>/config.json, opens the checkpoint in `dir` and calls LoadIntoSegment.
StatusOr<LoadedModel> LoadModelDir(const std::string& dir, const PrecisionSpec& spec, const std::string& model_id,
                                   const LoadProgressFn& progress = {}, const LoadOptions& options = {});

}  // namespace unmask::weights
