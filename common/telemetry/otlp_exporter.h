// OtlpExporter: sends finished spans to an OTLP/gRPC receiver (Jaeger on 4317, an OpenTelemetry
// Collector) from one background thread.
//
// Export() only takes a mutex to append to a bounded in-memory queue: it never waits for the
// network. When the queue is full the span is dropped and counted (dropped()). The thread sends
// an ExportTraceServiceRequest when a batch is full or every flush_interval, each RPC with a
// deadline; a failed RPC loses its batch (no retry: a dead collector must cost the service
// nothing but the lost spans), is counted (export_errors(), failed_spans()) and is logged at
// most once per minute. The queue is bounded in spans and in bytes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/telemetry/span_data.h"

namespace grpc {
class Channel;
class ChannelArguments;
}  // namespace grpc

namespace unmask::telemetry {

// Makes the exporter's channel to `endpoint` with `args` (the exporter's reconnect settings): how
// a service sends its spans over TLS (services/common/server_runner.h, --otlp-tls-*).
using OtlpChannelFactory =
    std::function<std::shared_ptr<grpc::Channel>(const std::string& endpoint, const grpc::ChannelArguments& args)>;

struct OtlpExporterOptions {
  std::string endpoint;                            // "host:port" of the OTLP/gRPC receiver
  OtlpChannelFactory channel;                      // unset: a plaintext channel
  // Spans waiting; more are dropped (and counted). 8192 holds the spans of ~900 jobs ending at
  // once (9 spans a job); bench_tracing measures the loss (docs/benchmarks.md "tracing").
  std::size_t max_queue_spans = 8192;
  std::size_t max_queue_bytes = 64 << 20;          // memory the waiting spans may hold (approx.)
  std::size_t max_batch_spans = 512;               // spans per batch
  // A batch whose request would be larger is split: receivers refuse messages over 4 MiB by
  // default (gRPC's default, and Jaeger's), and a job span with a thousand step events is
  // ~100 KiB.
  std::size_t max_request_bytes = 3 << 20;
  std::chrono::milliseconds flush_interval{1000};  // send at least this often
  std::chrono::milliseconds export_timeout{3000};  // deadline of one Export RPC
};

class OtlpExporter : public SpanExporter {
 public:
  explicit OtlpExporter(OtlpExporterOptions options);
  // Shutdown(2 s).
  ~OtlpExporter() override;
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  void Export(std::unique_ptr<SpanData> span) override;

  // Asks the thread to send now and waits until every span queued before the call was sent or
  // given up on. False when `timeout` passed first.
  bool Flush(std::chrono::milliseconds timeout);
  // Sends what is queued (each RPC bounded by the time left) and stops the thread. Spans
  // exported afterwards are dropped. Idempotent.
  void Shutdown(std::chrono::milliseconds timeout = std::chrono::seconds(2));

  // Spans dropped because the queue was full (or the exporter was shut down).
  std::uint64_t dropped() const;
  // Export RPCs that failed, and the spans they carried.
  std::uint64_t export_errors() const;
  std::uint64_t failed_spans() const;
  // Spans the receiver accepted (rejected ones reported in partial_success are not counted).
  std::uint64_t exported_spans() const;
  std::size_t queue_size() const;
  std::size_t queue_bytes() const;
  // Export RPCs sent (successful or not); a split batch counts once per request.
  std::uint64_t requests() const;
  const OtlpExporterOptions& options() const { return options_; }

 private:
  struct Rpc;  // the gRPC channel and stub, kept out of this header
  using Clock = std::chrono::steady_clock;

  void Run();
  // Sends one batch (as several requests when it is too large); `deadline` caps each RPC.
  void Send(std::vector<std::unique_ptr<SpanData>>& batch, Clock::time_point deadline);
  void SendRequest(std::vector<std::unique_ptr<SpanData>>::iterator begin,
                   std::vector<std::unique_ptr<SpanData>>::iterator end, Clock::time_point deadline);
  void ReportFailure(const std::string& what);

  const OtlpExporterOptions options_;
  std::unique_ptr<Rpc> rpc_;

  mutable std::mutex mu_;
  std::condition_variable wake_;  // the thread waits here for a full batch, a flush or stop
  std::condition_variable done_;  // Flush() waits here for handled_ to catch up
  std::deque<std::pair<std::unique_ptr<SpanData>, std::size_t>> queue_;  // span, ApproxBytes
  std::size_t queue_bytes_ = 0;
  std::uint64_t enqueued_ = 0;  // spans ever accepted into the queue
  std::uint64_t handled_ = 0;   // of those, spans sent or lost in a failed RPC
  std::uint64_t flush_wanted_ = 0;
  bool stop_ = false;
  Clock::time_point stop_deadline_{};
  std::uint64_t dropped_ = 0;
  std::uint64_t export_errors_ = 0;
  std::uint64_t failed_spans_ = 0;
  std::uint64_t exported_spans_ = 0;
  std::uint64_t requests_ = 0;
  Clock::time_point last_log_{};
  bool logged_once_ = false;

  std::thread thread_;
};

}  // namespace unmask::telemetry
