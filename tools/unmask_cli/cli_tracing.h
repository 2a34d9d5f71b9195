// Tracing from the `unmask` CLI: each command that issues an RPC makes a CLIENT span named after
// the RPC ("unmask.v1.Scheduler/Generate"), the root of the request's trace (or a child of
// --traceparent), injects its traceparent into the call, and ends it with the call's status.
// The exporter is started on the first call and flushed before the process exits, bounded by
// kFlushTimeout: a collector that is down or slow loses the spans, never the command.
//
// Flags (global, before the subcommand): --otlp-endpoint (default: $OTEL_EXPORTER_OTLP_ENDPOINT),
// --trace-sample-ratio, --traceparent (default: $TRACEPARENT). With no endpoint nothing is
// recorded, but a given traceparent is still passed on to the scheduler as it is.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "common/telemetry/otlp_exporter.h"
#include "services/common/tls_options.h"
#include "common/telemetry/span.h"
#include "common/telemetry/tracer.h"

namespace unmask::cli {

inline constexpr char kCliServiceName[] = "unmask-cli";
inline constexpr std::chrono::milliseconds kFlushTimeout{2000};

struct TraceFlags {
  std::string otlp_endpoint;  // empty: tracing off
  double sample_ratio = 1.0;
  std::string traceparent;    // the caller's context; empty: a new trace
  tls::ClientTlsOptions otlp_tls;  // --otlp-tls-*: the export over TLS, as the services'
};

// Registers the flags on `app` (group "Tracing").
void AddTraceOptions(CLI::App& app, TraceFlags& flags);
// The flags with those left empty filled from OTEL_EXPORTER_OTLP_ENDPOINT and TRACEPARENT. A
// value from the environment that does not parse is ignored with a warning on stderr (it must not
// break a command).
TraceFlags WithTraceEnvironment(TraceFlags flags);

// One RPC's client context and span.
class RpcCall {
 public:
  RpcCall(std::unique_ptr<grpc::ClientContext> ctx, telemetry::Span span)
      : ctx_(std::move(ctx)), span_(std::move(span)) {}
  grpc::ClientContext* ctx() { return ctx_.get(); }
  telemetry::Span& span() { return span_; }
  // Puts the status on the span and ends it; returns `status`. `job_failure`: the call went
  // through but the job it streamed failed (the span's status is then an error with it).
  const grpc::Status& Finish(const grpc::Status& status, std::string_view job_failure = {});

 private:
  std::unique_ptr<grpc::ClientContext> ctx_;
  telemetry::Span span_;
};

// The CLI's tracer, started lazily on the first span.
class CliTracing {
 public:
  // `flags` is read on the first StartCall (after parsing); it must outlive this object.
  explicit CliTracing(const TraceFlags& flags) : flags_(flags) {}
  ~CliTracing() { Shutdown(); }
  CliTracing(const CliTracing&) = delete;
  CliTracing& operator=(const CliTracing&) = delete;

  // A CLIENT span for `method` ("package.Service/Method") to `address`, child of --traceparent
  // when given, injected into `ctx`. Prints "trace_id=<hex>" on stderr when the span is recorded.
  telemetry::Span StartCall(grpc::ClientContext* ctx, std::string_view method, std::string_view address);
  // Sends the spans still queued (at most `timeout`) and stops the exporter. Idempotent.
  void Shutdown(std::chrono::milliseconds timeout = kFlushTimeout);

 private:
  void Start();

  const TraceFlags& flags_;
  bool started_ = false;
  telemetry::SpanContext parent_;
  std::shared_ptr<telemetry::OtlpExporter> exporter_;
  std::unique_ptr<telemetry::Tracer> tracer_;
};

}  // namespace unmask::cli
