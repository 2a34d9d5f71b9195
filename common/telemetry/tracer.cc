#include "common/telemetry/tracer.h"

#include <algorithm>
#include <cmath>

namespace unmask::telemetry {

Tracer::Tracer(std::string service_name, std::shared_ptr<SpanExporter> exporter, double sample_ratio)
    : service_name_(std::make_shared<const std::string>(std::move(service_name))),
      exporter_(std::move(exporter)),
      sample_ratio_(std::isnan(sample_ratio) ? 0.0 : std::clamp(sample_ratio, 0.0, 1.0)) {}

Tracer& Tracer::Disabled() {
  static Tracer* disabled = new Tracer("disabled", nullptr, 0.0);
  return *disabled;
}

Span Tracer::StartSpan(std::string_view name, const SpanContext& parent, SpanKind kind,
                       std::uint64_t start_unix_nano) const {
  const bool has_parent = parent.valid();
  if (!exporter_) {
    // Off: a no-op span that passes the parent's context through unchanged.
    return has_parent ? Span(parent, nullptr) : Span();
  }
  SpanContext ctx;
  ctx.trace_id = has_parent ? parent.trace_id : NewTraceId();
  ctx.span_id = NewSpanId();
  ctx.trace_state = has_parent ? parent.trace_state : std::string();
  const bool sampled = (!has_parent || parent.sampled()) && ShouldSample(ctx.trace_id, sample_ratio_);
  ctx.flags = static_cast<std::uint8_t>(has_parent ? (parent.flags & ~kTraceFlagSampled) : 0);
  if (sampled) ctx.flags |= kTraceFlagSampled;
  if (!sampled) return Span(std::move(ctx), nullptr);

  auto rec = std::make_unique<Span::Recording>();
  rec->exporter = exporter_;
  rec->data = std::make_unique<SpanData>();
  SpanData& d = *rec->data;
  d.service_name = service_name_;
  d.context = ctx;
  if (has_parent) {
    d.parent_span_id = parent.span_id;
    d.parent_remote = parent.remote;
  }
  d.name = std::string(name);
  d.kind = kind;
  d.start_unix_nano = start_unix_nano != 0 ? start_unix_nano : NowUnixNano();
  return Span(std::move(ctx), std::move(rec));
}

}  // namespace unmask::telemetry
