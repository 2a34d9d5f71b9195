// An OTLP/gRPC trace receiver stood up inside a test (or the tracing benchmark): a real gRPC
// server on 127.0.0.1 port 0 implementing opentelemetry.proto.collector.trace.v1.TraceService.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"

namespace unmask::telemetry::testing {

namespace otlp = opentelemetry::proto;

struct ReceivedSpan {
  std::string service;  // resource attribute service.name
  std::string scope;    // instrumentation scope name
  otlp::trace::v1::Span span;
};

class TestCollector final : public otlp::collector::trace::v1::TraceService::Service {
 public:
  // Starts listening; endpoint() is "127.0.0.1:<port>". `credentials`: TLS (default plaintext).
  explicit TestCollector(std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials());
  ~TestCollector() override;

  const std::string& endpoint() const { return endpoint_; }
  grpc::Status Export(grpc::ServerContext* ctx, const otlp::collector::trace::v1::ExportTraceServiceRequest* req,
                      otlp::collector::trace::v1::ExportTraceServiceResponse* resp) override;

  // True once at least `n` spans arrived.
  bool WaitForSpans(std::size_t n, std::chrono::milliseconds timeout);
  std::vector<ReceivedSpan> spans() const;
  std::size_t span_count() const;
  std::size_t request_count() const;
  // The largest request received, serialized bytes.
  std::size_t max_request_bytes() const;
  // Spans per request received so far.
  std::vector<std::size_t> batch_sizes() const;
  // Drop the received spans (to measure the next stretch only).
  void Clear();
  // Report this many spans of each following request as rejected (partial_success).
  void set_reject_per_request(std::int64_t n);
  // When true, only count spans (the benchmark's mode: no copies kept).
  void set_count_only(bool count_only);

 private:
  std::unique_ptr<grpc::Server> server_;
  std::string endpoint_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ReceivedSpan> spans_;
  std::vector<std::size_t> batch_sizes_;
  std::size_t span_count_ = 0;
  std::size_t max_request_bytes_ = 0;
  std::int64_t reject_ = 0;
  bool count_only_ = false;
};

// A 127.0.0.1 port that nothing listens on (bound once, then closed).
int UnusedPort();

// GET http://127.0.0.1:<port><path> over a plain socket (HTTP/1.0). Returns the status code and
// the body; status 0 on a connection error.
struct HttpResponse {
  int status = 0;
  std::string headers;
  std::string body;
};
HttpResponse HttpGet(int port, const std::string& path);

}  // namespace unmask::telemetry::testing
