#include "common/telemetry/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <iterator>
#include <thread>

#include "common/util/host_port.h"

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

// The exporter's counts, read at each scrape (the exporter keeps them; copying them into
// prometheus Counters would need a timer): unmask_trace_spans_dropped_total{reason},
// unmask_trace_spans_exported_total and unmask_trace_export_queue_spans.
class ServiceMetrics::ExporterCounts : public prometheus::Collectable {
 public:
  void Watch(std::shared_ptr<const OtlpExporter> exporter) {
    std::lock_guard<std::mutex> lock(mu_);
    exporter_ = std::move(exporter);
  }
  std::vector<prometheus::MetricFamily> Collect() const override {
    double queue_full = 0;
    double export_failed = 0;
    double exported = 0;
    double queued = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (exporter_) {
        queue_full = static_cast<double>(exporter_->dropped());
        export_failed = static_cast<double>(exporter_->failed_spans());
        exported = static_cast<double>(exporter_->exported_spans());
        queued = static_cast<double>(exporter_->queue_size());
      }
    }
    prometheus::MetricFamily dropped;
    dropped.name = "unmask_trace_spans_dropped_total";
    dropped.help = "Finished spans that never reached the OTLP receiver, by reason";
    dropped.type = prometheus::MetricType::Counter;
    for (auto [reason, value] : {std::pair<const char*, double>{"queue_full", queue_full},
                                 std::pair<const char*, double>{"export_failed", export_failed}}) {
      prometheus::ClientMetric m;
      m.label.push_back({"reason", reason});
      m.counter.value = value;
      dropped.metric.push_back(std::move(m));
    }
    prometheus::MetricFamily sent;
    sent.name = "unmask_trace_spans_exported_total";
    sent.help = "Finished spans the OTLP receiver accepted";
    sent.type = prometheus::MetricType::Counter;
    sent.metric.emplace_back().counter.value = exported;
    prometheus::MetricFamily queue;
    queue.name = "unmask_trace_export_queue_spans";
    queue.help = "Finished spans waiting in the exporter's queue (bounded by --trace-queue-spans)";
    queue.type = prometheus::MetricType::Gauge;
    queue.metric.emplace_back().gauge.value = queued;
    return {dropped, sent, queue};
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const OtlpExporter> exporter_;
};

ServiceMetrics::ServiceMetrics()
    : registry_(std::make_shared<prometheus::Registry>()), exporter_counts_(std::make_shared<ExporterCounts>()) {
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
  step_batch_ = &prometheus::BuildHistogram()
                     .Name("unmask_step_batch_jobs")
                     .Help("Jobs whose steps shared one forward pass")
                     .Register(r)
                     .Add({}, prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64});
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
                      .Name("unmask_fitting_used_bytes")
                      .Help("Memory held for model weights and caches")
                      .Register(r)
                      .Add({});
  memory_budget_ = &prometheus::BuildGauge()
                        .Name("unmask_fitting_budget_bytes")
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
  compute_info_ = &prometheus::BuildGauge()
                       .Name("unmask_compute_info")
                       .Help("1 for the weights' storage type, the compute type, the few-row kernel path and why they were chosen")
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
void ServiceMetrics::ObserveStepBatch(double jobs) { step_batch_->Observe(jobs); }
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
void ServiceMetrics::SetComputeInfo(std::string_view model, std::string_view storage, std::string_view compute,
                                    std::string_view gemm, std::string_view why) {
  if (compute_info_current_ != nullptr) compute_info_->Remove(compute_info_current_);
  compute_info_current_ = &compute_info_->Add({{"model", std::string(model)},
                                               {"storage", std::string(storage)},
                                               {"compute", std::string(compute)},
                                               {"gemm", std::string(gemm)},
                                               {"why", std::string(why)}});
  compute_info_current_->Set(1);
}

void ServiceMetrics::WatchExporter(std::shared_ptr<const OtlpExporter> exporter) {
  exporter_counts_->Watch(std::move(exporter));
}

std::vector<std::weak_ptr<prometheus::Collectable>> ServiceMetrics::collectables() const {
  return {registry_, exporter_counts_};
}

namespace {

constexpr std::size_t kMaxRequestBytes = 16 << 10;
constexpr int kIoTimeoutSeconds = 5;

std::string Errno(int err) { return std::strerror(err); }

// "host:port", "[v6]:port" or "port" -> host ("" for a bare port or ":port") and port text.
bool SplitListen(const std::string& listen, std::string* host, std::string* port) {
  HostPortRules rules;
  rules.allow_empty_host = true;
  rules.allow_bare_port = true;
  auto parsed = ParseHostPort(listen, rules);
  if (!parsed.ok()) return false;
  *host = parsed->host;
  *port = std::to_string(parsed->port);
  return true;
}


std::string Response(int code, const char* reason, const std::string& content_type, const std::string& body,
                     bool head = false) {
  std::string out = "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\nContent-Type: " + content_type +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  if (!head) out += body;
  return out;
}

}  // namespace

// An accepted socket, read and written in the clear or through its TLS session.
struct MetricsExposer::Connection {
  int fd = -1;
  SSL* ssl = nullptr;

  ssize_t Read(char* buf, std::size_t size) {
    if (ssl == nullptr) return ::recv(fd, buf, size, 0);
    const int n = SSL_read(ssl, buf, static_cast<int>(size));
    return n > 0 ? n : -1;
  }
  void WriteAll(const std::string& data) {
    std::size_t done = 0;
    while (done < data.size()) {
      ssize_t n;
      if (ssl != nullptr) {
        const int w = SSL_write(ssl, data.data() + done, static_cast<int>(data.size() - done));
        n = w > 0 ? w : -1;
      } else {
        n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
      }
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  }
};

StatusOr<std::unique_ptr<MetricsExposer>> MetricsExposer::Start(const std::string& listen, std::shared_ptr<SSL_CTX> tls) {
  if (listen.empty()) return InvalidArgumentError("metrics listen address: empty");
  std::string host, port;
  if (!SplitListen(listen, &host, &port)) {
    return InvalidArgumentError("metrics: want host:port or a port, got '" + listen + "'");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int gai = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found);
  if (gai != 0 || found == nullptr) {
    return UnavailableError("metrics: cannot listen on " + listen + ": " + ::gai_strerror(gai));
  }
  std::unique_ptr<MetricsExposer> out(new MetricsExposer());
  out->tls_ = std::move(tls);
  std::string error = "no address";
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      error = Errno(errno);
      continue;
    }
    const int one = 1;
    (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6) {
      const int zero = 0;  // "[::]" takes IPv4 too
      (void)::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    }
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
      error = Errno(errno);
      ::close(fd);
      continue;
    }
    out->listen_fd_ = fd;
    break;
  }
  ::freeaddrinfo(found);
  if (out->listen_fd_ < 0) return UnavailableError("metrics: cannot listen on " + listen + ": " + error);
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  if (::getsockname(out->listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    return UnavailableError("metrics: no port bound for " + listen + ": " + Errno(errno));
  }
  out->port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                           : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  if (::pipe2(out->wake_fds_, O_CLOEXEC) != 0) {
    return UnavailableError("metrics: cannot create a pipe: " + Errno(errno));
  }
  out->thread_ = std::thread([raw = out.get()] { raw->Serve(); });
  return out;
}

MetricsExposer::~MetricsExposer() {
  if (thread_.joinable()) {
    const char stop = 1;
    while (::write(wake_fds_[1], &stop, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  for (int fd : {listen_fd_, wake_fds_[0], wake_fds_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void MetricsExposer::Serve() {
  // OpenSSL writes with write(2), which raises SIGPIPE when a client has gone (a refused
  // handshake's alert, a scraper that hung up): blocked on this thread, the write fails with EPIPE
  // instead of the signal killing the service, and the pending signal is taken after each
  // connection.
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}};
    const int n = ::poll(fds, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    // Every read and write, the handshake included, under a deadline: a silent client cannot
    // hold the endpoint for long.
    timeval tv{kIoTimeoutSeconds, 0};
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void)::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    Connection c{fd, nullptr};
    if (tls_) {
      c.ssl = SSL_new(tls_.get());
      if (c.ssl != nullptr && SSL_set_fd(c.ssl, fd) == 1 && SSL_accept(c.ssl) == 1) {
        Answer(c);
        SSL_shutdown(c.ssl);
      }
      ERR_clear_error();  // a failed handshake is the client's: nothing to keep
      SSL_free(c.ssl);
      const timespec now{0, 0};
      while (sigtimedwait(&pipe_signal, nullptr, &now) > 0) {
      }
    } else {
      Answer(c);
    }
    ::close(fd);
  }
}

void MetricsExposer::Answer(Connection& c) {
  // One request per connection (the socket has its deadline, Serve).
  std::string request;
  char buf[2048];
  while (request.find("\r\n\r\n") == std::string::npos && request.find("\n\n") == std::string::npos) {
    const ssize_t n = c.Read(buf, sizeof(buf));
    if (n < 0 && errno == EINTR && c.ssl == nullptr) continue;
    if (n <= 0) break;
    request.append(buf, static_cast<std::size_t>(n));
    if (request.size() > kMaxRequestBytes) {
      c.WriteAll(Response(431, "Request Header Fields Too Large", "text/plain", "request too large\n"));
      return;
    }
  }
  // "GET /metrics?x=y HTTP/1.1"
  const auto line_end = request.find_first_of("\r\n");
  const std::string line = request.substr(0, line_end);
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string::npos ? std::string::npos : line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) {
    if (!line.empty()) c.WriteAll(Response(400, "Bad Request", "text/plain", "bad request\n"));
    return;
  }
  const std::string method = line.substr(0, sp1);
  std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  if (path != "/metrics") {
    c.WriteAll(Response(404, "Not Found", "text/plain", "not found; the metrics are at /metrics\n"));
    return;
  }
  if (method != "GET" && method != "HEAD") {
    c.WriteAll(Response(405, "Method Not Allowed", "text/plain", "GET /metrics\n"));
    return;
  }
  c.WriteAll(Response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", Scrape(), method == "HEAD"));
}

std::string MetricsExposer::Scrape() {
  std::vector<prometheus::MetricFamily> families;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& weak : collectables_) {
      if (auto c = weak.lock()) {
        auto collected = c->Collect();
        families.insert(families.end(), std::make_move_iterator(collected.begin()),
                        std::make_move_iterator(collected.end()));
      }
    }
  }
  return prometheus::TextSerializer().Serialize(families);
}

void MetricsExposer::Register(const ServiceMetrics& metrics) {
  for (const auto& c : metrics.collectables()) Register(c);
}

void MetricsExposer::Register(const std::weak_ptr<prometheus::Collectable>& collectable) {
  std::lock_guard<std::mutex> lock(mu_);
  collectables_.push_back(collectable);
}

}  // namespace unmask::telemetry
