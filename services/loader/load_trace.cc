#include "services/loader/load_trace.h"

#include <cctype>

namespace unmask::loader {

std::string LayerOfTensor(std::string_view name) {
  for (std::string_view prefix : {std::string_view("blocks."), std::string_view("layers.")}) {
    std::size_t at = 0;
    while ((at = name.find(prefix, at)) != std::string_view::npos) {
      // A whole dotted component: at the start or after a '.'.
      const bool starts = at == 0 || name[at - 1] == '.';
      std::size_t end = at + prefix.size();
      while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
      if (starts && end > at + prefix.size() && (end == name.size() || name[end] == '.'))
        return std::string(name.substr(at, end - at));
      at += prefix.size();
    }
  }
  return {};
}

LoadTrace::LoadTrace(const telemetry::Tracer& tracer, telemetry::Span& load_span, std::string model_id)
    : tracer_(tracer), load_span_(load_span), model_id_(std::move(model_id)) {}

void LoadTrace::OnProgress(const weights::LoadProgress& p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return;
  if (!saw_progress_ || p.phase != phase_) {
    load_span_.AddEvent("phase", {{"phase", weights::LoadPhaseName(p.phase)},
                                  {"tensors_done", p.tensors_done},
                                  {"bytes_done", p.bytes_done}});
  }
  saw_progress_ = true;
  phase_ = p.phase;
  tensors_total_ = p.tensors_total;
  bytes_total_ = p.bytes_total;
  last_bytes_done_ = p.bytes_done;
  // Progress comes before each tensor, so the first tensor of the next layer (or the next
  // phase) is when the previous layer is complete.
  const std::string layer = p.phase == weights::LoadPhase::kStreaming ? LayerOfTensor(p.current_tensor) : std::string();
  if (layer != layer_) {
    EndLayerLocked(p.bytes_done, true);
    if (!layer.empty()) {
      layer_ = layer;
      layer_span_ = tracer_.StartSpan(layer, load_span_.context());
      layer_span_.SetAttribute("model_id", model_id_);
      layer_span_.SetAttribute("layer", layer);
      layer_start_bytes_ = p.bytes_done;
      layer_tensors_ = 0;
      ++layers_;
    }
  }
  if (!layer_.empty()) ++layer_tensors_;
}

void LoadTrace::EndLayerLocked(std::uint64_t bytes_done, bool ok) {
  if (layer_.empty()) return;
  layer_span_.SetAttribute("tensors", layer_tensors_);
  layer_span_.SetAttribute("bytes", bytes_done - layer_start_bytes_);
  if (!ok) layer_span_.SetError("the load ended before this layer was complete");
  layer_span_.End();
  layer_.clear();
}

void LoadTrace::End(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return;
  ended_ = true;
  EndLayerLocked(last_bytes_done_, ok);
  if (saw_progress_) {
    load_span_.SetAttribute("load.layers", layers_);
    load_span_.SetAttribute("load.tensors_total", tensors_total_);
    load_span_.SetAttribute("load.bytes_total", bytes_total_);
  }
  load_span_.SetAttribute("load.ran", saw_progress_);  // false: already loaded, nothing streamed
}

int LoadTrace::layers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return layers_;
}

}  // namespace unmask::loader
