// Prometheus metrics: the families every unmask service exposes, and the HTTP endpoint that
// serves them in the text format on a port of its own (--metrics-listen).
//
// Names follow the Prometheus conventions (unit suffix _seconds/_bytes/_ratio, _total on
// counters) and carry few labels, none of them unbounded (no job ids, no trace ids):
//
//   unmask_requests_total{method,code}            counter   RPCs by method and gRPC status name
//   unmask_request_duration_seconds{method}       histogram RPC handling time
//   unmask_queue_depth                            gauge     jobs waiting
//   unmask_queue_wait_seconds                     histogram time from submit to start
//   unmask_job_run_seconds                        histogram time from start to end of a job
//   unmask_step_seconds                           histogram one denoising step (one packed forward)
//   unmask_step_batch_jobs                        histogram jobs that shared a step's forward
//   unmask_generated_tokens_total                 counter
//   unmask_tokens_per_second                      gauge     last measured generation rate
//   unmask_fitting_used_bytes                      gauge
//   unmask_fitting_budget_bytes                    gauge
//   unmask_clamps_total{field}                    counter   request fields clamped to limits
//   unmask_model_load_progress_ratio{model}       gauge     0..1 while loading, 1 when loaded
//   unmask_model_load_seconds                     histogram
//   unmask_trace_spans_dropped_total{reason}      counter   queue_full | export_failed
//   unmask_trace_spans_exported_total             counter   spans the OTLP receiver accepted
//   unmask_trace_export_queue_spans               gauge     spans waiting in the exporter
//   (the last three read from the OTLP exporter at scrape time)
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/util/status.h"

namespace prometheus {
class Collectable;
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

typedef struct ssl_ctx_st SSL_CTX;  // OpenSSL's, as <openssl/types.h> declares it

namespace unmask::telemetry {

class OtlpExporter;

class ServiceMetrics {
 public:
  ServiceMetrics();
  ~ServiceMetrics();
  ServiceMetrics(const ServiceMetrics&) = delete;
  ServiceMetrics& operator=(const ServiceMetrics&) = delete;

  // requests_total{method, code} += 1 and request_duration_seconds{method} observes `seconds`.
  void RecordRpc(std::string_view method, grpc::StatusCode code, double seconds);

  void SetQueueDepth(double jobs);
  void ObserveQueueWait(double seconds);
  void ObserveJobRun(double seconds);
  void ObserveStep(double seconds);
  void ObserveStepBatch(double jobs);
  void AddGeneratedTokens(std::uint64_t tokens);
  void SetTokensPerSecond(double tokens_per_second);
  void SetMemoryUsed(double bytes);
  void SetMemoryBudget(double bytes);
  void AddClamp(std::string_view field, std::uint64_t n = 1);
  void SetModelLoadProgress(std::string_view model, double ratio);
  void ObserveModelLoad(double seconds);
  // unmask_compute_info{model, storage, compute, gemm, why} = 1 for the model this process
  // computes with now (the previous labels are removed when it changes).
  void SetComputeInfo(std::string_view model, std::string_view storage, std::string_view compute, std::string_view gemm,
                      std::string_view why);

  // unmask_trace_spans_{dropped,exported}_total and unmask_trace_export_queue_spans read this
  // exporter's counters at every scrape (null: 0).
  void WatchExporter(std::shared_ptr<const OtlpExporter> exporter);

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }
  // What an exposer must register: the registry and the scrape-time collectors.
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables() const;

 private:
  class ExporterCounts;

  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<ExporterCounts> exporter_counts_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Histogram>* request_duration_;
  prometheus::Family<prometheus::Counter>* clamps_;
  prometheus::Family<prometheus::Gauge>* load_progress_;
  prometheus::Family<prometheus::Gauge>* compute_info_;
  prometheus::Gauge* compute_info_current_ = nullptr;
  prometheus::Gauge* queue_depth_;
  prometheus::Histogram* queue_wait_;
  prometheus::Histogram* job_run_;
  prometheus::Histogram* step_;
  prometheus::Histogram* step_batch_;
  prometheus::Counter* generated_tokens_;
  prometheus::Gauge* tokens_per_second_;
  prometheus::Gauge* memory_used_;
  prometheus::Gauge* memory_budget_;
  prometheus::Histogram* model_load_;
};

// The HTTP endpoint serving GET /metrics: one thread (default stack size) accepting on the
// listen socket and answering one request per connection (HTTP/1.1 with Connection: close).
//
// Not prometheus-cpp's civetweb Exposer: civetweb (1.15, as packaged) starts its threads with a
// fixed 100 KiB stack, and glibc refuses such a thread (EINVAL) in a process whose static TLS
// does not fit in it; LibTorch's dependencies (OpenBLAS, glog) take over 100 KiB, so the executor
// and the scheduler could not serve metrics at all.
class MetricsExposer {
 public:
  // `listen` is "host:port" ("0.0.0.0:9091", "127.0.0.1:0", "[::]:9091", "localhost:9091") or a
  // bare port; port 0 picks a free one (see port()). Fails with UNAVAILABLE when it cannot listen.
  // `tls`: serve HTTPS with this server context (the services make it from --metrics-tls-*,
  // services/common/ssl_context.h); null: plain HTTP. A client whose handshake fails (no
  // certificate under mutual TLS, plain HTTP) is dropped and the endpoint goes on.
  static StatusOr<std::unique_ptr<MetricsExposer>> Start(const std::string& listen,
                                                         std::shared_ptr<SSL_CTX> tls = nullptr);

  // Stops serving (wakes the thread through a pipe; returns in milliseconds).
  ~MetricsExposer();

  // The port actually bound.
  int port() const { return port_; }
  void Register(const ServiceMetrics& metrics);
  void Register(const std::weak_ptr<prometheus::Collectable>& collectable);

 private:
  MetricsExposer() = default;
  struct Connection;  // a socket, with its TLS session when serving HTTPS
  void Serve();
  void Answer(Connection& c);
  std::string Scrape();

  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // the destructor writes to [1]; the thread polls [0]
  int port_ = 0;
  std::shared_ptr<SSL_CTX> tls_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables_;
};

}  // namespace unmask::telemetry
