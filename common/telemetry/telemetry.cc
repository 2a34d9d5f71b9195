#include "common/telemetry/telemetry.h"

#include <cmath>

#include "common/telemetry/log.h"
#include "common/util/host_port.h"

namespace unmask::telemetry {

std::string NormalizeOtlpEndpoint(const std::string& endpoint) {
  std::string e = endpoint;
  for (const char* scheme : {"http://", "grpc://"}) {
    if (e.rfind(scheme, 0) == 0) e = e.substr(std::char_traits<char>::length(scheme));
  }
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

Status ValidateTelemetryOptions(const TelemetryOptions& o) {
  if (!(o.trace_sample_ratio >= 0.0 && o.trace_sample_ratio <= 1.0)) {
    return InvalidArgumentError("--trace-sample-ratio: must be in [0, 1], got " + std::to_string(o.trace_sample_ratio));
  }
  if (o.trace_queue_spans < 1) return InvalidArgumentError("--trace-queue-spans: must be >= 1, got 0");
  if (o.trace_batch_spans < 1 || o.trace_batch_spans > o.trace_queue_spans) {
    return InvalidArgumentError("--trace-batch-spans: must be in [1, --trace-queue-spans=" +
                                std::to_string(o.trace_queue_spans) + "], got " + std::to_string(o.trace_batch_spans));
  }
  if (o.trace_flush_interval_ms < 1 || o.trace_flush_interval_ms > 60'000) {
    return InvalidArgumentError("--trace-flush-interval-ms: must be in [1, 60000], got " +
                                std::to_string(o.trace_flush_interval_ms));
  }
  if (o.service_name.empty()) return InvalidArgumentError("--service-name: must not be empty");
  if (!o.otlp_endpoint.empty()) {
    if (o.otlp_endpoint.rfind("https://", 0) == 0) {
      return InvalidArgumentError("--otlp-endpoint: give host:port (" + o.otlp_endpoint +
                                  "); TLS to the receiver is --otlp-tls, --otlp-tls-ca and the other --otlp-tls-* flags");
    }
    const std::string e = NormalizeOtlpEndpoint(o.otlp_endpoint);
    if (!ParseHostPort(e).ok()) {
      return InvalidArgumentError("--otlp-endpoint: want host:port (e.g. jaeger:4317), got '" + o.otlp_endpoint + "'");
    }
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<Telemetry>> Telemetry::Start(const TelemetryOptions& options) {
  UNMASK_RETURN_IF_ERROR(ValidateTelemetryOptions(options));
  std::unique_ptr<Telemetry> t(new Telemetry());
  SetLogServiceName(options.service_name);
  t->metrics_ = std::make_unique<ServiceMetrics>();
  if (!options.metrics_listen.empty()) {
    UNMASK_ASSIGN_OR_RETURN(t->exposer_, MetricsExposer::Start(options.metrics_listen, options.metrics_tls));
    t->exposer_->Register(*t->metrics_);
  }
  if (!options.otlp_endpoint.empty()) {
    OtlpExporterOptions eo;
    eo.endpoint = NormalizeOtlpEndpoint(options.otlp_endpoint);
    eo.max_queue_spans = options.trace_queue_spans;
    eo.max_batch_spans = options.trace_batch_spans;
    eo.flush_interval = std::chrono::milliseconds(options.trace_flush_interval_ms);
    eo.channel = options.otlp_channel;
    t->exporter_ = std::make_shared<OtlpExporter>(eo);
    t->metrics_->WatchExporter(t->exporter_);
  }
  t->tracer_ = std::make_unique<Tracer>(options.service_name, t->exporter_, options.trace_sample_ratio);
  Log(LogLevel::kInfo, {}, {}, "telemetry",
      {{"tracing", t->exporter_ ? std::string_view(t->exporter_->options().endpoint) : std::string_view("off")},
       {"otlp", t->exporter_ ? std::string_view(options.otlp_security) : std::string_view("off")},
       {"sample_ratio", std::to_string(options.trace_sample_ratio)},
       {"queue_spans", std::to_string(options.trace_queue_spans)},
       {"batch_spans", std::to_string(options.trace_batch_spans)},
       {"metrics_port", t->exposer_ ? std::to_string(t->exposer_->port()) : std::string("off")},
       {"metrics", t->exposer_ ? std::string_view(options.metrics_security) : std::string_view("off")}});
  return t;
}

Telemetry::~Telemetry() { Shutdown(); }

void Telemetry::Shutdown(std::chrono::milliseconds timeout) {
  if (exporter_) exporter_->Shutdown(timeout);
}

}  // namespace unmask::telemetry
