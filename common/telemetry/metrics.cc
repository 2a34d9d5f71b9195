#include "common/telemetry/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <thread>

#include "common/telemetry/grpc_tracing.h"
#include "common/telemetry/otlp_exporter.h"

namespace unmask::telemetry {
namespace {

using Buckets = prometheus::Histogram::BucketBoundaries;

const Buckets kRequestBuckets{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
const Buckets kQueueWaitBuckets{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
const Buckets kJobRunBuckets{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600};
const Buckets kStepBuckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
const Buckets kModelLoadBuckets{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};

}  // namespace

// unmask_trace_spans_dropped_total{reason}, computed from the exporter at each scrape (the
// exporter keeps the counts; copying them into a prometheus Counter would need a timer).
class ServiceMetrics::DroppedSpans : public prometheus::Collectable {
 public:
  void Watch(std::shared_ptr<const OtlpExporter> exporter) {
    std::lock_guard<std::mutex> lock(mu_);
    exporter_ = std::move(exporter);
  }
  std::vector<prometheus::MetricFamily> Collect() const override {
    double queue_full = 0;
    double export_failed = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (exporter_) {
        queue_full = static_cast<double>(exporter_->dropped());
        export_failed = static_cast<double>(exporter_->failed_spans());
      }
    }
    prometheus::MetricFamily family;
    family.name = "unmask_trace_spans_dropped_total";
    family.help = "Finished spans that never reached the OTLP receiver, by reason";
    family.type = prometheus::MetricType::Counter;
    for (auto [reason, value] : {std::pair<const char*, double>{"queue_full", queue_full},
                                 std::pair<const char*, double>{"export_failed", export_failed}}) {
      prometheus::ClientMetric m;
      m.label.push_back({"reason", reason});
      m.counter.value = value;
      family.metric.push_back(std::move(m));
    }
    return {family};
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const OtlpExporter> exporter_;
};

ServiceMetrics::ServiceMetrics()
    : registry_(std::make_shared<prometheus::Registry>()), dropped_spans_(std::make_shared<DroppedSpans>()) {
  auto& r = *registry_;
  requests_ = &prometheus::BuildCounter()
                   .Name("unmask_requests_total")
                   .Help("gRPC requests handled, by method and status code")
                   .Register(r);
  request_duration_ = &prometheus::BuildHistogram()
                           .Name("unmask_request_duration_seconds")
                           .Help("Time spent handling a gRPC request, by method")
                           .Register(r);
  queue_depth_ = &prometheus::BuildGauge().Name("unmask_queue_depth").Help("Jobs waiting to run").Register(r).Add({});
  queue_wait_ = &prometheus::BuildHistogram()
                     .Name("unmask_queue_wait_seconds")
                     .Help("Time a job waited between submission and start")
                     .Register(r)
                     .Add({}, kQueueWaitBuckets);
  job_run_ = &prometheus::BuildHistogram()
                  .Name("unmask_job_run_seconds")
                  .Help("Time a job ran, from start to completion")
                  .Register(r)
                  .Add({}, kJobRunBuckets);
  step_ = &prometheus::BuildHistogram()
               .Name("unmask_step_seconds")
               .Help("Duration of one denoising step")
               .Register(r)
               .Add({}, kStepBuckets);
  generated_tokens_ = &prometheus::BuildCounter()
                           .Name("unmask_generated_tokens_total")
                           .Help("Tokens generated")
                           .Register(r)
                           .Add({});
  tokens_per_second_ = &prometheus::BuildGauge()
                            .Name("unmask_tokens_per_second")
                            .Help("Generation rate of the most recent job, tokens per second")
                            .Register(r)
                            .Add({});
  memory_used_ = &prometheus::BuildGauge()
                      .Name("unmask_memory_used_bytes")
                      .Help("Memory held for model weights and caches")
                      .Register(r)
                      .Add({});
  memory_budget_ = &prometheus::BuildGauge()
                        .Name("unmask_memory_budget_bytes")
                        .Help("Memory this service may use")
                        .Register(r)
                        .Add({});
  clamps_ = &prometheus::BuildCounter()
                 .Name("unmask_clamps_total")
                 .Help("Request fields clamped to the configured limits, by field")
                 .Register(r);
  load_progress_ = &prometheus::BuildGauge()
                        .Name("unmask_model_load_progress_ratio")
                        .Help("Fraction of a model's bytes loaded (1 when loaded)")
                        .Register(r);
  model_load_ = &prometheus::BuildHistogram()
                     .Name("unmask_model_load_seconds")
                     .Help("Time to load a model")
                     .Register(r)
                     .Add({}, kModelLoadBuckets);
}

ServiceMetrics::~ServiceMetrics() = default;

void ServiceMetrics::RecordRpc(std::string_view method, grpc::StatusCode code, double seconds) {
  const std::string m(method);
  requests_->Add({{"method", m}, {"code", GrpcCodeName(code)}}).Increment();
  request_duration_->Add({{"method", m}}, kRequestBuckets).Observe(seconds);
}

void ServiceMetrics::SetQueueDepth(double jobs) { queue_depth_->Set(jobs); }
void ServiceMetrics::ObserveQueueWait(double seconds) { queue_wait_->Observe(seconds); }
void ServiceMetrics::ObserveJobRun(double seconds) { job_run_->Observe(seconds); }
void ServiceMetrics::ObserveStep(double seconds) { step_->Observe(seconds); }
void ServiceMetrics::AddGeneratedTokens(std::uint64_t tokens) {
  generated_tokens_->Increment(static_cast<double>(tokens));
}
void ServiceMetrics::SetTokensPerSecond(double tokens_per_second) { tokens_per_second_->Set(tokens_per_second); }
void ServiceMetrics::SetMemoryUsed(double bytes) { memory_used_->Set(bytes); }
void ServiceMetrics::SetMemoryBudget(double bytes) { memory_budget_->Set(bytes); }
void ServiceMetrics::AddClamp(std::string_view field, std::uint64_t n) {
  clamps_->Add({{"field", std::string(field)}}).Increment(static_cast<double>(n));
}
void ServiceMetrics::SetModelLoadProgress(std::string_view model, double ratio) {
  load_progress_->Add({{"model", std::string(model)}}).Set(ratio);
}
void ServiceMetrics::ObserveModelLoad(double seconds) { model_load_->Observe(seconds); }

void ServiceMetrics::WatchExporter(std::shared_ptr<const OtlpExporter> exporter) {
  dropped_spans_->Watch(std::move(exporter));
}

std::vector<std::weak_ptr<prometheus::Collectable>> ServiceMetrics::collectables() const {
  return {registry_, dropped_spans_};
}

StatusOr<std::unique_ptr<MetricsExposer>> MetricsExposer::Start(const std::string& listen) {
  if (listen.empty()) return InvalidArgumentError("metrics listen address: empty");
  std::unique_ptr<MetricsExposer> out(new MetricsExposer());
  try {
    out->exposer_ = std::make_unique<prometheus::Exposer>(listen, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return UnavailableError("metrics: cannot listen on " + listen + ": " + e.what());
  }
  const auto ports = out->exposer_->GetListeningPorts();
  if (ports.empty() || ports.front() <= 0) return UnavailableError("metrics: no port bound for " + listen);
  out->port_ = ports.front();
  // The host part of "host:port" (a bare port, 0.0.0.0 and [::] listen on loopback too).
  const auto colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? std::string() : listen.substr(0, colon);
  if (host.empty() || host == "0.0.0.0" || host == "[::]" || host == "localhost") host = "127.0.0.1";
  in_addr probe{};
  if (::inet_pton(AF_INET, host.c_str(), &probe) == 1) out->wake_host_ = host;
  return out;
}

namespace {

// One connection attempt that is closed at once: enough to make civetweb's accept poll return.
void Poke(const std::string& host, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  (void)::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::close(fd);
}

}  // namespace

MetricsExposer::~MetricsExposer() {
  if (!exposer_) return;
  if (wake_host_.empty()) {
    exposer_.reset();
    return;
  }
  // mg_stop (inside ~Exposer) raises civetweb's stop flag and joins its accept thread; poke the
  // listener until that is done.
  std::atomic<bool> stopped{false};
  std::thread waker([&] {
    for (int i = 0; i < 100 && !stopped.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (!stopped.load()) Poke(wake_host_, port_);
    }
  });
  exposer_.reset();
  stopped.store(true);
  waker.join();
}

void MetricsExposer::Register(const ServiceMetrics& metrics) {
  for (const auto& c : metrics.collectables()) exposer_->RegisterCollectable(c);
}

void MetricsExposer::Register(const std::weak_ptr<prometheus::Collectable>& collectable) {
  exposer_->RegisterCollectable(collectable);
}

}  // namespace unmask::telemetry
