#include "common/telemetry/telemetry.h"

#include <cmath>

#include "common/telemetry/log.h"

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
  if (o.service_name.empty()) return InvalidArgumentError("--service-name: must not be empty");
  if (!o.otlp_endpoint.empty()) {
    if (o.otlp_endpoint.rfind("https://", 0) == 0) {
      return InvalidArgumentError("--otlp-endpoint: TLS is not supported; give host:port of a plaintext receiver");
    }
    const std::string e = NormalizeOtlpEndpoint(o.otlp_endpoint);
    const auto colon = e.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == e.size()) {
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
    UNMASK_ASSIGN_OR_RETURN(t->exposer_, MetricsExposer::Start(options.metrics_listen));
    t->exposer_->Register(*t->metrics_);
  }
  if (!options.otlp_endpoint.empty()) {
    OtlpExporterOptions eo;
    eo.endpoint = NormalizeOtlpEndpoint(options.otlp_endpoint);
    t->exporter_ = std::make_shared<OtlpExporter>(eo);
    t->metrics_->WatchExporter(t->exporter_);
  }
  t->tracer_ = std::make_unique<Tracer>(options.service_name, t->exporter_, options.trace_sample_ratio);
  Log(LogLevel::kInfo, {}, {}, "telemetry",
      {{"tracing", t->exporter_ ? std::string_view(t->exporter_->options().endpoint) : std::string_view("off")},
       {"sample_ratio", std::to_string(options.trace_sample_ratio)},
       {"metrics_port", t->exposer_ ? std::to_string(t->exposer_->port()) : std::string("off")}});
  return t;
}

Telemetry::~Telemetry() { Shutdown(); }

void Telemetry::Shutdown(std::chrono::milliseconds timeout) {
  if (exporter_) exporter_->Shutdown(timeout);
}

}  // namespace unmask::telemetry
