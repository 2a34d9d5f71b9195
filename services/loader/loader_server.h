// The loader as a library (after TensorFlow Serving's Server::Options / BuildAndStart): the
// options unmask-loader's flags set, and a Start that returns a running, serving loader, so that
// tests start one in-process. services/loader/main.cc only parses flags into the options.
//
// Lifecycle (services/common/server_runner.h): Start adopts (or removes) the segments a previous
// loader left, listens, preloads, then reports SERVING. Shutdown reports NOT_SERVING, gives
// in-flight calls up to the drain timeout, then unlinks the loaded segments (or, with
// keep_segments_on_exit, leaves them for the next loader to adopt) and flushes the spans.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/telemetry/telemetry.h"
#include "common/util/status.h"
#include "services/common/server_runner.h"
#include "services/common/tls_options.h"
#include "services/loader/loader_core.h"
#include "services/loader/loader_grpc.h"

namespace unmask::loader {

inline telemetry::TelemetryOptions LoaderTelemetryDefaults() {
  telemetry::TelemetryOptions t;
  t.service_name = "unmask-loader";
  t.metrics_listen = "0.0.0.0:9092";
  return t;
}

struct LoaderServerOptions {
  std::string listen = "0.0.0.0:50052";  // gRPC; port 0 picks one
  // model_roots (required), default_precision, and where leftover segments are looked for.
  // core.device is set from `device`.
  LoaderOptions core;
  std::vector<std::string> preload;  // MODEL_ID[:precision] loaded at start
  std::string device = "cpu";        // cpu, cuda or cuda:N
  int drain_timeout_seconds = 30;
  bool adopt_segments = true;
  bool keep_segments_on_exit = false;
  tls::ServerTlsOptions tls;
  telemetry::TelemetryOptions telemetry = LoaderTelemetryDefaults();
  tls::ClientTlsOptions otlp_tls;  // --otlp-tls-*: the spans to the OTLP receiver over TLS
  tls::ServerTlsOptions metrics_tls;  // --metrics-tls-*: /metrics over HTTPS
};

class LoaderServer {
 public:
  // A failure was already printed (or logged) as unmask-loader always did; ExitCodeFor maps it.
  static StatusOr<std::unique_ptr<LoaderServer>> Start(const LoaderServerOptions& options);
  ~LoaderServer();  // Shutdown()

  int port() const { return runner_.port(); }
  int metrics_port() const { return telemetry_->metrics_port(); }
  LoaderCore& core() { return *core_; }
  // Returns once Shutdown has finished (called from another thread).
  void Wait() { shutdown_.Wait(); }
  // NOT_SERVING, drain (up to the drain timeout), then unlink (or keep) the segments. Idempotent.
  void Shutdown();

 private:
  explicit LoaderServer(const LoaderServerOptions& options) : options_(options) {}
  void Preload(const std::string& item);
  void ReleaseSegments();

  LoaderServerOptions options_;
  std::unique_ptr<telemetry::Telemetry> telemetry_;
  std::unique_ptr<LoaderCore> core_;
  std::unique_ptr<LoaderGrpcService> service_;
  services::ServerRunner runner_{"Loader"};
  services::ShutdownOnce shutdown_;
  bool started_ = false;
};

inline StatusOr<std::unique_ptr<LoaderServer>> StartLoaderServer(const LoaderServerOptions& options) {
  return LoaderServer::Start(options);
}

}  // namespace unmask::loader
