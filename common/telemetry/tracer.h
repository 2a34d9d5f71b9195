// Tracer: starts spans for one service. Build one per process (see telemetry.h) and share it.
//
//   Tracer tracer("unmask-executor", exporter, /*sample_ratio=*/0.1);
//   Span span = tracer.StartSpan("executor.Run", parent_context, SpanKind::kServer);
//   span.AddEvent("step", {{"step", 3}});
//   InjectContext(&client_ctx, span.context());
//
// Sampling: a new trace is sampled when ShouldSample(trace_id, ratio). A child of a remote
// parent is sampled when the parent says sampled AND this service's ratio admits the trace id,
// so services configured with the same ratio make the same decision, a parent that was not
// sampled never gets recorded children, and a caller cannot raise a service above its ratio.
// Spans that are not sampled still get ids, so the context goes on downstream (flags 00) and
// log lines still carry the trace id.
//
// A Tracer with no exporter is off: StartSpan returns a no-op span whose context is the
// parent's, so propagation still works through a service that does not trace.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/telemetry/span.h"
#include "common/telemetry/span_data.h"
#include "common/telemetry/trace_context.h"

namespace unmask::telemetry {

class Tracer {
 public:
  // `exporter` may be null: tracing off. `sample_ratio` is clamped to [0, 1].
  Tracer(std::string service_name, std::shared_ptr<SpanExporter> exporter, double sample_ratio);
  // A tracer that is off (for tests and code paths that have no telemetry wired).
  static Tracer& Disabled();

  // A span named `name`, child of `parent` when parent.valid(), else the root of a new trace.
  // `start_unix_nano` backdates the start (0: now), e.g. a queue-wait span created when the job
  // is dequeued, starting at its stored enqueue time.
  Span StartSpan(std::string_view name, const SpanContext& parent, SpanKind kind = SpanKind::kInternal,
                 std::uint64_t start_unix_nano = 0) const;
  // The root of a new trace.
  Span StartSpan(std::string_view name, SpanKind kind = SpanKind::kInternal) const {
    return StartSpan(name, SpanContext{}, kind);
  }

  bool enabled() const { return exporter_ != nullptr; }
  const std::string& service_name() const { return *service_name_; }
  double sample_ratio() const { return sample_ratio_; }

 private:
  std::shared_ptr<const std::string> service_name_;
  std::shared_ptr<SpanExporter> exporter_;
  double sample_ratio_;
};

}  // namespace unmask::telemetry
