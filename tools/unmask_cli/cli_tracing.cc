#include "tools/unmask_cli/cli_tracing.h"

#include <cstdlib>
#include <iostream>

#include "common/telemetry/grpc_tracing.h"
#include "common/telemetry/log.h"
#include "common/telemetry/telemetry.h"
#include "common/telemetry/trace_context.h"
#include "services/common/grpc_tls.h"
#include "services/common/tls_flags.h"

namespace unmask::cli {
namespace {

std::string EndpointError(const std::string& endpoint) {
  telemetry::TelemetryOptions o;
  o.service_name = kCliServiceName;
  o.otlp_endpoint = endpoint;
  const Status s = telemetry::ValidateTelemetryOptions(o);
  if (s.ok()) return "";
  // CLI11 names the option itself.
  const std::string prefix = "--otlp-endpoint: ";
  const std::string& m = s.message();
  return m.rfind(prefix, 0) == 0 ? m.substr(prefix.size()) : m;
}

std::string TraceparentError(const std::string& value) {
  if (value.empty()) return "";
  auto parsed = telemetry::ParseTraceparent(value);
  return parsed.ok() ? std::string() : parsed.status().message();
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

}  // namespace

void AddTraceOptions(CLI::App& app, TraceFlags& f) {
  app.add_option("--otlp-endpoint", f.otlp_endpoint,
                 "Trace the call: OTLP/gRPC receiver host:port (e.g. 127.0.0.1:4317); default "
                 "$OTEL_EXPORTER_OTLP_ENDPOINT, empty: no tracing")
      ->check([](const std::string& v) { return EndpointError(v); })
      ->group("Tracing");
  app.add_option("--trace-sample-ratio", f.sample_ratio, "Fraction of new traces to record, 0..1")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0))
      ->group("Tracing");
  app.add_option("--traceparent", f.traceparent,
                 "Continue this W3C trace (00-<trace id>-<span id>-<flags>); default $TRACEPARENT")
      ->check([](const std::string& v) { return TraceparentError(v); })
      ->group("Tracing");
  tls::AddClientTlsFlags(app, &f.otlp_tls, "otlp", "the OTLP trace receiver");
}

TraceFlags WithTraceEnvironment(TraceFlags f) {
  if (f.otlp_endpoint.empty()) {
    const std::string env = Env("OTEL_EXPORTER_OTLP_ENDPOINT");
    const std::string error = env.empty() ? "" : EndpointError(env);
    if (error.empty()) {
      f.otlp_endpoint = env;
    } else {
      std::cerr << "unmask: OTEL_EXPORTER_OTLP_ENDPOINT ignored (" << error << ")\n";
    }
  }
  if (f.traceparent.empty()) {
    const std::string env = Env("TRACEPARENT");
    const std::string error = TraceparentError(env);
    if (error.empty()) {
      f.traceparent = env;
    } else {
      std::cerr << "unmask: TRACEPARENT ignored (" << error << ")\n";
    }
  }
  return f;
}

const grpc::Status& RpcCall::Finish(const grpc::Status& status, std::string_view job_failure) {
  if (status.ok() && !job_failure.empty()) {
    span_.SetAttribute("rpc.grpc.status_code", 0);
    span_.SetError(job_failure);
  } else {
    telemetry::SetRpcStatus(span_, status);
  }
  span_.End();
  return status;
}

void CliTracing::Start() {
  started_ = true;
  const TraceFlags f = WithTraceEnvironment(flags_);
  if (!f.traceparent.empty()) {
    auto parsed = telemetry::ParseTraceparent(f.traceparent);
    if (parsed.ok()) parent_ = *std::move(parsed);
  }
  if (!f.otlp_endpoint.empty()) {
    telemetry::SetLogServiceName(kCliServiceName);
    telemetry::OtlpExporterOptions eo;
    eo.endpoint = telemetry::NormalizeOtlpEndpoint(f.otlp_endpoint);
    // A CLI call is short: the spans go out at exit (Shutdown), not on a timer.
    eo.export_timeout = kFlushTimeout;
    auto material = tls::LoadClientTls(f.otlp_tls);
    if (!material.ok()) {
      std::cerr << "unmask: " << material.status().message() << "\n";
      throw CLI::RuntimeError(2);
    }
    if (*material) {
      eo.channel = [tls = **material](const std::string& endpoint, const grpc::ChannelArguments& args) {
        return tls::CreateChannel(endpoint, tls, args);
      };
    }
    exporter_ = std::make_shared<telemetry::OtlpExporter>(eo);
  }
  // No exporter: a tracer that records nothing but passes --traceparent on unchanged.
  tracer_ = std::make_unique<telemetry::Tracer>(kCliServiceName, exporter_, f.sample_ratio);
}

telemetry::Span CliTracing::StartCall(grpc::ClientContext* ctx, std::string_view method, std::string_view address) {
  if (!started_) Start();
  telemetry::Span span = telemetry::StartClientSpan(*tracer_, ctx, parent_, method);
  if (span.recording()) {
    const auto slash = method.rfind('/');
    if (slash != std::string_view::npos) span.SetAttribute("rpc.service", method.substr(0, slash));
    span.SetAttribute("server.address", address);
    std::cerr << "trace_id=" << span.trace_id_hex() << std::endl;
  }
  return span;
}

void CliTracing::Shutdown(std::chrono::milliseconds timeout) {
  if (exporter_) exporter_->Shutdown(timeout);
}

}  // namespace unmask::cli
