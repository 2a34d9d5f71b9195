// One call per service: the tracer (with its OTLP exporter when an endpoint is given), the
// metrics and their HTTP endpoint, built from the command-line flags (options.h).
//
//   auto tel = telemetry::Telemetry::Start(options);     // StatusOr
//   if (!tel.ok()) { std::cerr << tel.status().ToString(); return 1; }
//   LoaderGrpcService svc(core, (*tel)->tracer(), &(*tel)->metrics());
//   ...
//   (*tel)->Shutdown();   // after the gRPC server drained: sends the spans still queued
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/telemetry/metrics.h"
#include "common/telemetry/otlp_exporter.h"
#include "common/telemetry/tracer.h"
#include "common/util/status.h"

namespace unmask::telemetry {

struct TelemetryOptions {
  std::string otlp_endpoint;        // "host:port"; an "http://" prefix is accepted; empty: off
  std::string service_name = "unmask";
  double trace_sample_ratio = 1.0;  // of new traces; see Tracer for children
  std::string metrics_listen;       // "host:port"; empty: no metrics endpoint
  // The exporter's queue and batches (OtlpExporterOptions; the defaults keep a 100 jobs/s
  // stack under 1% loss, see docs/benchmarks.md "tracing").
  std::size_t trace_queue_spans = OtlpExporterOptions().max_queue_spans;
  std::size_t trace_batch_spans = OtlpExporterOptions().max_batch_spans;
  std::int64_t trace_flush_interval_ms = OtlpExporterOptions().flush_interval.count();
  // The exporter's channel (unset: plaintext) and how it is secured, for the start-up log line
  // ("plaintext", "TLS", "mutual TLS"): set by the services from --otlp-tls-*.
  OtlpChannelFactory otlp_channel;
  std::string otlp_security = "plaintext";
  // /metrics over HTTPS with this server context (null: plain HTTP) and how it is secured, for
  // the start-up log line: set by the services from --metrics-tls-*.
  std::shared_ptr<SSL_CTX> metrics_tls;
  std::string metrics_security = "plaintext";
};

// Checks the options; the error names the flag.
Status ValidateTelemetryOptions(const TelemetryOptions& options);
// "jaeger:4317" from "jaeger:4317", "http://jaeger:4317" or "http://jaeger:4317/".
std::string NormalizeOtlpEndpoint(const std::string& endpoint);

class Telemetry {
 public:
  // Starts the exporter (when otlp_endpoint is set) and the metrics endpoint (when
  // metrics_listen is set), sets the log service name, and logs one line saying what is on.
  static StatusOr<std::unique_ptr<Telemetry>> Start(const TelemetryOptions& options);
  ~Telemetry();

  const Tracer& tracer() const { return *tracer_; }
  ServiceMetrics& metrics() { return *metrics_; }
  // Null when tracing is off.
  OtlpExporter* exporter() const { return exporter_.get(); }
  // The bound metrics port; 0 when the endpoint is off.
  int metrics_port() const { return exposer_ ? exposer_->port() : 0; }

  // Sends queued spans (bounded by `timeout`) and stops the exporter thread.
  void Shutdown(std::chrono::milliseconds timeout = std::chrono::seconds(2));

 private:
  Telemetry() = default;
  std::shared_ptr<OtlpExporter> exporter_;
  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<ServiceMetrics> metrics_;
  std::unique_ptr<MetricsExposer> exposer_;
};

}  // namespace unmask::telemetry
