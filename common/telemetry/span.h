// Span: one timed operation of a trace, RAII. Started by Tracer::StartSpan, ended by End() or by
// the destructor. A span that is not recording (tracing off, or not sampled) is a no-op object:
// every method is an inline null check, so instrumented code costs nothing measurable when
// tracing is off (bench/telemetry/bench_tracing measures it).
//
// Recording methods are thread-safe (a job's span may get step events from a worker thread while
// the handler thread sets its status); moving or ending a span races with nothing else.
#pragma once

#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/telemetry/span_data.h"
#include "common/telemetry/trace_context.h"

namespace unmask::telemetry {

class Span {
 public:
  // A non-recording span with an invalid context.
  Span() = default;
  ~Span() { End(); }
  Span(Span&& other) noexcept;
  Span& operator=(Span&& other) noexcept;
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  // True when this span will be exported (tracing on and the trace sampled).
  bool recording() const { return rec_ != nullptr; }

  void SetAttribute(std::string_view key, AttrValue value) {
    if (rec_) SetAttributeSlow(key, value);
  }
  // A timestamped event, e.g. one denoising step: AddEvent("step", {{"step", 3}, {"unmasked", 4}}).
  void AddEvent(std::string_view name, std::initializer_list<Attr> attributes = {}) {
    if (rec_) AddEventSlow(name, attributes);
  }
  void SetStatus(SpanStatus status, std::string_view message = {}) {
    if (rec_) SetStatusSlow(status, message);
  }
  void SetOk() { SetStatus(SpanStatus::kOk); }
  void SetError(std::string_view message) { SetStatus(SpanStatus::kError, message); }

  // Ends the span and hands it to the exporter. Later calls (and the destructor) do nothing.
  void End() {
    if (rec_) EndSlow();
  }
  // As End(), with the end time given (e.g. the time of the last step of a block whose end is
  // only known when the next block starts). 0 means now.
  void EndAt(std::uint64_t end_unix_nano) {
    if (rec_) EndSlow(end_unix_nano);
  }

  // This span's context: inject it into outgoing calls and store it with jobs so that their
  // work becomes its children. When tracing is off it is the parent's context unchanged (so
  // a traceparent that came in still goes out); it is invalid when there was none.
  const SpanContext& context() const { return context_; }
  // "00-...": the traceparent to inject; empty when the context is invalid.
  std::string traceparent() const { return FormatTraceparent(context_); }
  // For log lines: the trace id in hex, empty when none.
  std::string trace_id_hex() const { return context_.trace_id_hex(); }

 private:
  friend class Tracer;
  struct Recording {
    std::mutex mu;
    std::unique_ptr<SpanData> data;
    std::shared_ptr<SpanExporter> exporter;
  };
  Span(SpanContext context, std::unique_ptr<Recording> rec) : context_(std::move(context)), rec_(std::move(rec)) {}

  void SetAttributeSlow(std::string_view key, const AttrValue& value);
  void AddEventSlow(std::string_view name, std::initializer_list<Attr> attributes);
  void SetStatusSlow(SpanStatus status, std::string_view message);
  void EndSlow(std::uint64_t end_unix_nano = 0);

  SpanContext context_;
  std::unique_ptr<Recording> rec_;
};

}  // namespace unmask::telemetry
