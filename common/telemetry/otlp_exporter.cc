#include "common/telemetry/otlp_exporter.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "common/telemetry/log.h"
#include "common/telemetry/otlp_convert.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"

namespace unmask::telemetry {

namespace collector = opentelemetry::proto::collector::trace::v1;

struct OtlpExporter::Rpc {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<collector::TraceService::Stub> stub;
};

OtlpExporter::OtlpExporter(OtlpExporterOptions options) : options_(std::move(options)), rpc_(std::make_unique<Rpc>()) {
  grpc::ChannelArguments args;
  // Fail fast while the collector is down instead of piling up connection attempts; the queue
  // bound does the rest.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 10000);
  rpc_->channel = options_.channel ? options_.channel(options_.endpoint, args)
                                   : grpc::CreateCustomChannel(options_.endpoint, grpc::InsecureChannelCredentials(), args);
  rpc_->stub = collector::TraceService::NewStub(rpc_->channel);
  thread_ = std::thread([this] { Run(); });
}

OtlpExporter::~OtlpExporter() { Shutdown(); }

void OtlpExporter::Export(std::unique_ptr<SpanData> span) {
  if (!span) return;
  const std::size_t bytes = span->ApproxBytes();
  std::unique_lock<std::mutex> lock(mu_);
  if (stop_ || queue_.size() >= options_.max_queue_spans || queue_bytes_ + bytes > options_.max_queue_bytes) {
    ++dropped_;
    lock.unlock();
    return;  // `span` is freed outside the lock
  }
  queue_.emplace_back(std::move(span), bytes);
  queue_bytes_ += bytes;
  ++enqueued_;
  const bool batch_full = queue_.size() == std::max<std::size_t>(options_.max_batch_spans, 1);
  lock.unlock();
  if (batch_full) wake_.notify_one();
}

bool OtlpExporter::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const std::uint64_t target = enqueued_;
  flush_wanted_ = std::max(flush_wanted_, target);
  wake_.notify_one();
  return done_.wait_for(lock, timeout, [&] { return handled_ >= target; });
}

void OtlpExporter::Shutdown(std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_) {
      stop_ = true;
      stop_deadline_ = Clock::now() + timeout;
    }
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void OtlpExporter::Run() {
  const std::size_t max_batch = std::max<std::size_t>(options_.max_batch_spans, 1);
  Clock::time_point next_flush = Clock::now() + options_.flush_interval;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait_until(lock, next_flush, [&] {
      return stop_ || queue_.size() >= max_batch || flush_wanted_ > handled_;
    });
    if (queue_.empty()) {
      if (stop_) break;
      if (Clock::now() >= next_flush) next_flush = Clock::now() + options_.flush_interval;
      continue;
    }
    const bool timer = Clock::now() >= next_flush;
    if (!stop_ && !timer && queue_.size() < max_batch && flush_wanted_ <= handled_) continue;
    if (timer) next_flush = Clock::now() + options_.flush_interval;

    std::vector<std::unique_ptr<SpanData>> batch;
    const std::size_t n = std::min(queue_.size(), max_batch);
    batch.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      batch.push_back(std::move(queue_.front().first));
      queue_bytes_ -= queue_.front().second;
      queue_.pop_front();
    }
    Clock::time_point deadline = Clock::now() + options_.export_timeout;
    if (stop_) deadline = std::min(deadline, stop_deadline_);
    lock.unlock();
    Send(batch, deadline);
    batch.clear();  // free the spans outside the lock
    lock.lock();
    handled_ += n;
    done_.notify_all();
  }
  // Whatever is left after the shutdown deadline is lost; count it as failed.
  failed_spans_ += queue_.size();
  handled_ += queue_.size();
  queue_.clear();
  queue_bytes_ = 0;
  done_.notify_all();
}

void OtlpExporter::Send(std::vector<std::unique_ptr<SpanData>>& batch, Clock::time_point deadline) {
  SendRequest(batch.begin(), batch.end(), deadline);
}

void OtlpExporter::SendRequest(std::vector<std::unique_ptr<SpanData>>::iterator begin,
                               std::vector<std::unique_ptr<SpanData>>::iterator end, Clock::time_point deadline) {
  const auto n = static_cast<std::uint64_t>(end - begin);
  if (n == 0) return;
  if (Clock::now() >= deadline) {
    std::lock_guard<std::mutex> lock(mu_);
    ++export_errors_;
    failed_spans_ += n;
    return;
  }
  // ToOtlpRequest reads the spans; it takes a vector, so lend them to one for the call.
  std::vector<std::unique_ptr<SpanData>> part(std::make_move_iterator(begin), std::make_move_iterator(end));
  collector::ExportTraceServiceRequest request = ToOtlpRequest(part);
  std::move(part.begin(), part.end(), begin);
  if (n > 1 && request.ByteSizeLong() > options_.max_request_bytes) {
    request.Clear();
    const auto mid = begin + static_cast<std::ptrdiff_t>(n / 2);
    SendRequest(begin, mid, deadline);
    SendRequest(mid, end, deadline);
    return;
  }
  collector::ExportTraceServiceResponse response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + (deadline - Clock::now()));
  const grpc::Status status = rpc_->stub->Export(&ctx, request, &response);
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++requests_;
    if (!status.ok()) {
      ++export_errors_;
      failed_spans_ += n;
      failure = "OTLP export to " + options_.endpoint + " failed: " + status.error_message() + " (gRPC code " +
                std::to_string(static_cast<int>(status.error_code())) + "); " + std::to_string(export_errors_) +
                " failed exports, " + std::to_string(failed_spans_) + " spans lost, " + std::to_string(dropped_) +
                " dropped on a full queue so far";
    } else {
      const auto rejected = static_cast<std::uint64_t>(
          std::clamp<std::int64_t>(response.partial_success().rejected_spans(), 0, static_cast<std::int64_t>(n)));
      exported_spans_ += n - rejected;
      failed_spans_ += rejected;
      if (rejected > 0 || !response.partial_success().error_message().empty()) {
        failure = "OTLP receiver " + options_.endpoint + " rejected " + std::to_string(rejected) +
                  " spans: " + response.partial_success().error_message();
      }
    }
  }
  if (!failure.empty()) ReportFailure(failure);
}

void OtlpExporter::ReportFailure(const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = Clock::now();
    if (logged_once_ && now - last_log_ < std::chrono::minutes(1)) return;
    logged_once_ = true;
    last_log_ = now;
  }
  Log(LogLevel::kWarn, {}, {}, what + " (logged at most once a minute)");
}

std::uint64_t OtlpExporter::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}
std::uint64_t OtlpExporter::export_errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return export_errors_;
}
std::uint64_t OtlpExporter::failed_spans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_spans_;
}
std::uint64_t OtlpExporter::exported_spans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return exported_spans_;
}
std::size_t OtlpExporter::queue_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_bytes_;
}
std::uint64_t OtlpExporter::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}
std::size_t OtlpExporter::queue_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

}  // namespace unmask::telemetry
