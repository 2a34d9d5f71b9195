// The scheduler as a library (after TensorFlow Serving's Server::Options / BuildAndStart): the
// options unmask-scheduler's flags set, and a Start that returns a running, serving scheduler, so
// that tests start one in-process. services/scheduler/main.cc only parses flags into the options.
//
// Lifecycle (services/common/server_runner.h): Start opens the job store (Redis, or in-process),
// follows the executors, listens (gRPC, and the OpenAI-compatible HTTP API when http_port >= 0),
// starts dispatching and reports SERVING. Shutdown reports NOT_SERVING, gives in-flight calls up
// to the drain timeout, stops the HTTP API and the dispatcher (jobs in flight finish) and flushes
// the spans.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/jobs/job_store.h"
#include "common/jobs/redis_tls.h"
#include "common/telemetry/telemetry.h"
#include "common/util/status.h"
#include "services/common/server_runner.h"
#include "services/common/tls_options.h"
#include "services/scheduler/executor_pool.h"
#include "services/scheduler/http/completion_service.h"
#include "services/scheduler/http/http_server.h"
#include "services/scheduler/job_dispatcher.h"
#include "services/scheduler/model_catalog.h"
#include "services/scheduler/scheduler_core.h"
#include "services/scheduler/scheduler_grpc.h"

namespace unmask::scheduler {

inline telemetry::TelemetryOptions SchedulerTelemetryDefaults() {
  telemetry::TelemetryOptions t;
  t.service_name = "unmask-scheduler";
  t.metrics_listen = "0.0.0.0:9091";
  return t;
}

inline DispatcherOptions SchedulerDispatchDefaults() {
  DispatcherOptions d;
  d.consumer_id = "scheduler-" + std::to_string(::getpid());
  return d;
}

struct SchedulerServerOptions {
  std::string listen = "0.0.0.0:50051";  // gRPC; port 0 picks one
  std::string redis;           // host[:port]; empty: the in-process queue
  std::string redis_password;  // AUTH when non-empty (main reads UNMASK_REDIS_PASSWORD)
  std::vector<std::string> executors, executors_dns;  // host:port, comma-separated or repeated
  std::vector<std::string> model_roots;
  std::string dispatch_policy = "least_busy";  // least_busy, round_robin, random
  std::string clamp_policy = "standard";       // off, standard, extreme
  std::string executor_precision = "bf16";     // assumed for executors that report no compute type: fp32, bf16, fp16
  std::string api_keys_file;                   // empty: no authentication
  int grpc_max_receive_bytes = 4 << 20;
  int http_port = -1;  // the OpenAI-compatible HTTP API on this port (0 picks one); < 0: off
  // host, max_body_bytes, threads; port and tls are set from http_port and the TLS options.
  http::HttpServerOptions http;
  int drain_timeout_seconds = 30;
  // max_queue, limits, default_deadline_seconds; the rest is set from the fields above.
  SchedulerOptions core;
  // threads, consumer_id, per_executor_limit, reaper_min_idle_ms, max_attempts; policy is set
  // from dispatch_policy.
  DispatcherOptions dispatch = SchedulerDispatchDefaults();
  tls::ServerTlsOptions tls;
  tls::ServerTlsOptions http_tls;  // none given: the HTTP API follows `tls`
  tls::ClientTlsOptions executor_tls;
  telemetry::TelemetryOptions telemetry = SchedulerTelemetryDefaults();
  tls::ClientTlsOptions redis_tls;  // --redis-tls-*: the job store's connections over TLS
  tls::ClientTlsOptions otlp_tls;  // --otlp-tls-*: the spans to the OTLP receiver over TLS
  tls::ServerTlsOptions metrics_tls;  // --metrics-tls-*: /metrics over HTTPS
};

class SchedulerServer {
 public:
  // A failure was already printed as unmask-scheduler always did; ExitCodeFor maps it.
  static StatusOr<std::unique_ptr<SchedulerServer>> Start(const SchedulerServerOptions& options);
  ~SchedulerServer();  // Shutdown()

  int port() const { return runner_.port(); }
  int http_port() const { return http_port_; }  // 0 when the HTTP API is off
  int metrics_port() const { return telemetry_->metrics_port(); }
  // Returns once Shutdown has finished (called from another thread).
  void Wait() { shutdown_.Wait(); }
  // NOT_SERVING, drain (up to the drain timeout), stop the HTTP API and the dispatcher. Idempotent.
  void Shutdown();

 private:
  struct Prepared;  // what the options' checks produced
  explicit SchedulerServer(const SchedulerServerOptions& options) : options_(options) {}
  static StatusOr<Prepared> Prepare(SchedulerServerOptions& o);
  Status StartTelemetry();
  Status OpenStore(const jobs::RedisTlsOptions& redis_tls);
  Status ServeGrpc(const Prepared& prepared);
  Status ServeHttp(const Prepared& prepared);

  SchedulerServerOptions options_;
  std::unique_ptr<telemetry::Telemetry> telemetry_;
  std::unique_ptr<jobs::JobStore> store_;
  std::unique_ptr<ExecutorPool> pool_;
  std::unique_ptr<ModelCatalog> catalog_;
  std::unique_ptr<SchedulerCore> core_;
  std::unique_ptr<JobDispatcher> dispatcher_;
  std::unique_ptr<SchedulerGrpcService> service_;
  services::ServerRunner runner_{"Scheduler"};
  std::unique_ptr<http::CompletionService> completions_;
  std::unique_ptr<http::OpenAiHttpServer> http_;
  int http_port_ = 0;
  services::ShutdownOnce shutdown_;
  bool started_ = false;
};

inline StatusOr<std::unique_ptr<SchedulerServer>> StartSchedulerServer(const SchedulerServerOptions& options) {
  return SchedulerServer::Start(options);
}

}  // namespace unmask::scheduler
