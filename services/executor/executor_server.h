// The executor as a library (after TensorFlow Serving's Server::Options / BuildAndStart): the
// options unmask-executor's flags set, and a Start that returns a running, serving executor, so
// that tests start one in-process. services/executor/main.cc only parses flags into the options.
//
// Lifecycle (services/common/server_runner.h): Start sets up the compute (threads, kernels),
// gets the model (from the loader, or from model_dir), warms it up, listens and reports SERVING;
// with a loader, a LeaseKeeper then follows it (re-attaches after a loader restart, lets go of a
// model a forced unload revoked). Shutdown reports NOT_SERVING, gives in-flight jobs up to the
// drain timeout, stops following the loader and flushes the spans.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/telemetry/telemetry.h"
#include "common/util/status.h"
#include "services/common/server_runner.h"
#include "services/common/tls_options.h"
#include "services/executor/executor_core.h"
#include "services/executor/executor_grpc.h"
#include "services/executor/lease_keeper.h"
#include "services/executor/loader_client.h"

namespace unmask::executor {

inline telemetry::TelemetryOptions ExecutorTelemetryDefaults() {
  telemetry::TelemetryOptions t;
  t.service_name = "unmask-executor";
  t.metrics_listen = "0.0.0.0:9093";
  return t;
}

inline ExecutorOptions ExecutorCoreDefaults() {
  ExecutorOptions o;
  o.executor_id = "executor-" + std::to_string(::getpid());
  o.workers = 0;  // planned from the model and the device (ExecutorServer::PlanWorkersFor)
  return o;
}

struct ExecutorServerOptions {
  std::string listen = "0.0.0.0:50053";  // gRPC; port 0 picks one
  std::string loader = "127.0.0.1:50052";
  std::string model;           // required: the model id
  std::string model_dir;       // read this checkpoint instead of attaching through the loader
  std::string load_precision;  // asked of the loader; empty: the loader's default
  std::string precision = "auto";  // compute type: auto, fp32, bf16, fp16
  std::string gemm = "auto";       // few-row kernel: auto, avx512, avx2, blas
  int attach_timeout_seconds = 300;
  int drain_timeout_seconds = 30;
  std::int64_t attention_chunk = 0;
  bool cuda_graphs = false;  // ModelOptions::cuda_graphs: a job stepping alone replays its CUDA graphs
  bool fused_kernels = true;  // ModelOptions::fused_kernels on cuda (--no-fused-kernels: off)
  int intra_op_threads = 0;
  // executor_id, device, workers, max_batch, max_queued_jobs, memory_reserve_bytes; model_id
  // and weights_precision are set by Start.
  ExecutorOptions core = ExecutorCoreDefaults();
  tls::ServerTlsOptions tls;
  tls::ClientTlsOptions loader_tls;
  telemetry::TelemetryOptions telemetry = ExecutorTelemetryDefaults();
  tls::ClientTlsOptions otlp_tls;  // --otlp-tls-*: the spans to the OTLP receiver over TLS
  tls::ServerTlsOptions metrics_tls;  // --metrics-tls-*: /metrics over HTTPS
};

class ExecutorServer {
 public:
  // A failure was already printed (or logged) as unmask-executor always did; ExitCodeFor maps it.
  static StatusOr<std::unique_ptr<ExecutorServer>> Start(const ExecutorServerOptions& options);
  ~ExecutorServer();  // Shutdown()

  int port() const { return runner_.port(); }
  int metrics_port() const { return telemetry_->metrics_port(); }
  ExecutorCore& core() { return *core_; }
  // Returns once Shutdown has finished (called from another thread).
  void Wait() { shutdown_.Wait(); }
  // NOT_SERVING, drain (up to the drain timeout), stop following the loader. Idempotent.
  void Shutdown();

 private:
  explicit ExecutorServer(const ExecutorServerOptions& options) : options_(options) {}
  Status StartTelemetry();
  Status BuildCore();
  Status PlanWorkersFor(const model::LladaModel& model);
  static void LogJobBudget(const ExecutorOptions& core, std::uint64_t job_budget_bytes);
  Status Serve(const std::optional<tls::ServerTlsMaterial>& tls);
  void FollowLoader();

  ExecutorServerOptions options_;
  std::optional<tls::ClientTlsMaterial> loader_tls_;  // loaded from options_.loader_tls
  std::unique_ptr<telemetry::Telemetry> telemetry_;
  std::unique_ptr<LoaderLease> lease_;  // until the keeper takes it
  std::unique_ptr<ExecutorCore> core_;
  std::unique_ptr<ExecutorGrpcService> service_;
  services::ServerRunner runner_{"Executor"};
  std::unique_ptr<LeaseKeeper> keeper_;
  services::ShutdownOnce shutdown_;
  bool started_ = false;
};

inline StatusOr<std::unique_ptr<ExecutorServer>> StartExecutorServer(const ExecutorServerOptions& options) {
  return ExecutorServer::Start(options);
}

}  // namespace unmask::executor
