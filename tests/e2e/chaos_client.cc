#include "tests/e2e/chaos_client.h"

#include <thread>

namespace unmask::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kCallTimeout = std::chrono::seconds(5);
constexpr auto kWatchTimeout = std::chrono::seconds(30);
constexpr auto kRetryPause = std::chrono::milliseconds(100);

std::shared_ptr<grpc::Channel> Connect(const std::string& address) {
  // A restarted scheduler is back within a second or two: reconnect quickly instead of backing
  // off for up to two minutes (gRPC's default).
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

std::string Describe(const grpc::Status& s) {
  return std::to_string(static_cast<int>(s.error_code())) + " " + s.error_message();
}

}  // namespace

bool IsRetryable(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

ChaosClient::ChaosClient(const std::string& address, Clock::time_point give_up)
    : channel_(Connect(address)), stub_(v1::Scheduler::NewStub(channel_)), give_up_(give_up) {}

ChaosClient::Submitted ChaosClient::Submit(const v1::GenerateRequest& request) {
  Submitted out;
  for (;; ++out.retries) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    v1::SubmitResponse resp;
    const grpc::Status s = stub_->Submit(&ctx, request, &resp);
    if (s.ok()) {
      out.job_id = resp.job_id();
      out.error.clear();
      return out;
    }
    out.error = Describe(s);
    if (!IsRetryable(s) || !TimeLeft()) return out;
    std::this_thread::sleep_for(kRetryPause);
  }
}

WatchOutcome ChaosClient::WatchToEnd(const std::string& job_id) {
  WatchOutcome out;
  for (;; ++out.rewatches) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kWatchTimeout);
    v1::WatchRequest req;
    req.set_job_id(job_id);
    auto reader = stub_->Watch(&ctx, req);
    v1::JobEvent ev;
    while (reader->Read(&ev)) {
      if (ev.has_completed()) {
        out.ended = out.completed = true;
        out.ids.assign(ev.completed().ids().begin(), ev.completed().ids().end());
      } else if (ev.has_failed()) {
        out.ended = true;
        out.failed_code = ev.failed().code();
        out.failed_message = ev.failed().message();
      }
    }
    const grpc::Status s = reader->Finish();
    if (out.ended) return out;
    out.last_error = s.ok() ? "the stream ended without a terminal event" : Describe(s);
    if (!(s.ok() || IsRetryable(s)) || !TimeLeft()) return out;
    std::this_thread::sleep_for(kRetryPause);
  }
}

ChaosClient::Looked ChaosClient::GetJob(const std::string& job_id) {
  Looked out;
  for (;;) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    v1::GetJobRequest req;
    req.set_job_id(job_id);
    const grpc::Status s = stub_->GetJob(&ctx, req, &out.info);
    if (s.ok()) {
      out.error.clear();
      return out;
    }
    out.error = Describe(s);
    if (!IsRetryable(s) || !TimeLeft()) return out;
    std::this_thread::sleep_for(kRetryPause);
  }
}

}  // namespace unmask::testing
