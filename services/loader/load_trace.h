// Tracing of one load, tensor by tensor: child spans of the LoadModel span, one per layer
// (blocks.N, named after the tensors as they stream: model.transformer.blocks.3.q_proj.weight is
// in blocks.3), each ended when the next layer starts or the load ends; phase changes are events
// on the load span. Fed from LoaderCore's LoadObserver, on the loading thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "common/telemetry/span.h"
#include "common/telemetry/tracer.h"
#include "common/registry/progressive_loader.h"

namespace unmask::loader {

// "blocks.3" for "model.transformer.blocks.3.q_proj.weight" (also "layers.N", the Hugging Face
// spelling); empty for tensors outside the layers (embeddings, final norm, head).
std::string LayerOfTensor(std::string_view tensor_name);

class LoadTrace {
 public:
  // `load_span` must outlive this object (it is the handler's span).
  LoadTrace(const telemetry::Tracer& tracer, telemetry::Span& load_span, std::string model_id);
  ~LoadTrace() { End(true); }
  LoadTrace(const LoadTrace&) = delete;
  LoadTrace& operator=(const LoadTrace&) = delete;

  void OnProgress(const weights::LoadProgress& progress);
  // Ends the open layer span (with an error status unless ok) and puts the totals on the load
  // span. Later calls do nothing.
  void End(bool ok);

  // Layers seen so far (for tests and the load span's attributes).
  int layers() const;

 private:
  void EndLayerLocked(std::uint64_t bytes_done, bool ok);

  const telemetry::Tracer& tracer_;
  telemetry::Span& load_span_;
  const std::string model_id_;
  mutable std::mutex mu_;
  bool ended_ = false;
  bool saw_progress_ = false;
  weights::LoadPhase phase_ = weights::LoadPhase::kValidating;
  std::string layer_;  // the open layer ("" when none)
  telemetry::Span layer_span_;
  std::int64_t layer_tensors_ = 0;
  std::uint64_t layer_start_bytes_ = 0;
  std::uint64_t last_bytes_done_ = 0;
  std::int64_t tensors_total_ = 0;
  std::uint64_t bytes_total_ = 0;
  int layers_ = 0;
};

}  // namespace unmask::loader
