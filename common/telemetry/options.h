// The telemetry flags every service takes. Header-only so that the library does not depend on
// CLI11; include it from main.cc:
//
//   telemetry::TelemetryOptions tel;
//   tel.service_name = "unmask-loader";      // defaults: set before registering
//   tel.metrics_listen = "0.0.0.0:9091";
//   telemetry::AddTelemetryOptions(app, &tel);
//   CLI11_PARSE(app, argc, argv);
//   auto telemetry = telemetry::Telemetry::Start(tel);
#pragma once

#include <CLI/CLI.hpp>

#include "common/telemetry/telemetry.h"

namespace unmask::telemetry {

inline void AddTelemetryOptions(CLI::App& app, TelemetryOptions* options) {
  app.add_option("--otlp-endpoint", options->otlp_endpoint,
                 "OTLP/gRPC trace receiver, host:port (e.g. jaeger:4317); empty turns tracing off")
      ->capture_default_str()
      ->group("Telemetry");
  app.add_option("--service-name", options->service_name, "service.name reported with every span and log line")
      ->capture_default_str()
      ->group("Telemetry");
  app.add_option("--trace-sample-ratio", options->trace_sample_ratio,
                 "fraction of new traces to record, 0..1 (decided on the trace id, so services agree)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0))
      ->group("Telemetry");
  app.add_option("--trace-queue-spans", options->trace_queue_spans,
                 "finished spans the exporter holds while waiting to send; past it spans are dropped and "
                 "counted in unmask_trace_spans_dropped_total")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group("Telemetry");
  app.add_option("--trace-batch-spans", options->trace_batch_spans,
                 "spans per OTLP export request; a full batch is sent at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group("Telemetry");
  app.add_option("--trace-flush-interval-ms", options->trace_flush_interval_ms,
                 "send what is queued at least this often, full batch or not")
      ->capture_default_str()
      ->check(CLI::Range(1, 60000))
      ->group("Telemetry");
  app.add_option("--metrics-listen", options->metrics_listen,
                 "host:port for the Prometheus /metrics endpoint (port 0 picks one); empty turns it off")
      ->capture_default_str()
      ->group("Telemetry");
}

}  // namespace unmask::telemetry
