// Replays a generation's repeating forwards as CUDA graphs. On a large GPU a step of the cached
// modes is a few milliseconds of device work behind about 1,600 operator launches (32 layers of
// LLaDA-8B), so the host, not the GPU, sets the pace; a captured graph is launched in one call.
//
// A forward is replayed only when it is the one captured: one segment with the same shape, the
// same ids tensor, cache, attention mask and offset (the device reads whatever those tensors
// hold when the graph runs, so new ids or a refilled cache in the same tensors are seen). A
// forward seen twice in a row is captured (after one eager run on the capture stream, which
// settles the libraries' lazy set-up); any other runs eagerly. The whole-sequence forward that
// refills a cache, segments with explicit position ids and packed batches always run eagerly.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

#include "common/model/packed_segment.h"

namespace unmask::model {

class LladaModel;

class GraphedForward {
 public:
  virtual ~GraphedForward() = default;
  // Whether this build can capture CUDA graphs (a LibTorch built with CUDA).
  static bool Available();
  // Null when graphs do not apply: not Available(), the model not on cuda, or its
  // ModelOptions::cuda_graphs off. Lives for one generation: its graphs hold that generation's
  // tensors.
  static std::unique_ptr<GraphedForward> Make(const LladaModel& model);
  // model.HiddenPacked({segment})[0]. A replayed result is the graph's own output tensor: valid
  // until the next call.
  virtual at::Tensor Hidden(const PackedSegment& segment) = 0;
  // Forwards captured and replayed so far (a capture's own forward counts as a replay).
  virtual std::int64_t captures() const = 0;
  virtual std::int64_t replays() const = 0;
};

}  // namespace unmask::model
