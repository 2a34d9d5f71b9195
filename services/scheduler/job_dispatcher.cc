#include "services/scheduler/job_dispatcher.h"

#include <algorithm>
#include <chrono>

#include "common/telemetry/grpc_tracing.h"
#include "common/telemetry/log.h"
#include "common/telemetry/metrics.h"
#include "services/common/grpc_status.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::scheduler {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string Decode(const tokenizer::Tokenizer& tok, const std::vector<std::int64_t>& ids) {
  std::vector<std::int32_t> known;
  for (auto id : ids) {
    if (id >= 0 && id <= INT32_MAX && tok.IdToToken(static_cast<std::int32_t>(id))) known.push_back(static_cast<std::int32_t>(id));
  }
  auto text = tok.Decode(known, /*skip_special_tokens=*/true);
  return text.ok() ? *text : "";
}

// The trace a job continues: the context stored when it was accepted (no parent when there is
// none or it cannot be read: the job's spans then start a trace of their own).
telemetry::SpanContext StoredContext(const jobs::JobRecord& record, const v1::StoredJob& stored) {
  const std::string& tp = !record.traceparent.empty() ? record.traceparent : stored.run().traceparent();
  if (tp.empty()) return {};
  auto parsed = telemetry::ParseTraceparent(tp);
  return parsed.ok() ? *parsed : telemetry::SpanContext{};
}

v1::JobEvent Failure(const std::string& job_id, const Status& s) {
  v1::JobEvent ev;
  ev.set_job_id(job_id);
  ev.mutable_failed()->set_code(static_cast<int>(s.code()));
  ev.mutable_failed()->set_message(s.message());
  return ev;
}

}  // namespace

std::string PartialText(const tokenizer::Tokenizer& tok, const std::vector<std::int64_t>& tokens, std::int64_t mask_id) {
  std::string out;
  std::vector<std::int64_t> run;
  for (auto id : tokens) {
    if (id == mask_id) {
      out += Decode(tok, run);
      run.clear();
      out += '_';
    } else {
      run.push_back(id);
    }
  }
  return out + Decode(tok, run);
}

JobDispatcher::JobDispatcher(jobs::JobStore& store, ExecutorPool& pool, ModelCatalog& catalog, DispatcherOptions options,
                             const telemetry::Tracer& tracer, telemetry::ServiceMetrics* metrics)
    : store_(store), pool_(pool), catalog_(catalog), options_(std::move(options)), tracer_(tracer), metrics_(metrics),
      picker_(options_.policy, options_.per_executor_limit, std::random_device{}()) {}

void JobDispatcher::UpdateQueueDepth() {
  if (metrics_ == nullptr) return;
  auto depth = store_.QueueDepth();
  if (depth.ok()) metrics_->SetQueueDepth(static_cast<double>(*depth));
}

JobDispatcher::~JobDispatcher() { Stop(); }

Status JobDispatcher::Persist(const char* what, const std::string& job_id, const std::function<Status()>& write) {
  // A run's outcome must outlive a Redis restart at the moment it arrives: dropping it would
  // leave the delivery to the reaper, and the job would run again. A stale handle (the reaper
  // gave the job to someone else meanwhile) is not retried.
  const auto give_up = Clock::now() + std::chrono::milliseconds(options_.store_retry_ms);
  auto pause = std::chrono::milliseconds(50);
  Status s = write();
  while (s.code() == StatusCode::kUnavailable && !stop_ && Clock::now() < give_up) {
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
    s = write();
  }
  if (!s.ok()) {
    telemetry::Log(telemetry::LogLevel::kWarn, {}, job_id, std::string("cannot store the job's ") + what,
                   {{"error", s.ToString()}});
  }
  return s;
}

void JobDispatcher::Start() {
  for (int i = 0; i < std::max(1, options_.threads); ++i) threads_.emplace_back([this] { ClaimLoop(); });
  threads_.emplace_back([this] { ReaperLoop(); });
}

void JobDispatcher::Stop() {
  stop_ = true;
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void JobDispatcher::ClaimLoop() {
  while (!stop_) {
    auto claimed = store_.Claim(options_.consumer_id, 200);
    if (!claimed.ok()) {
      if (claimed.status().code() != StatusCode::kDataLoss) {
        telemetry::Log(telemetry::LogLevel::kWarn, {}, {}, "claim failed", {{"error", claimed.status().ToString()}});
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
      continue;
    }
    if (*claimed) {
      UpdateQueueDepth();
      RunJob(**claimed);
    }
  }
}

void JobDispatcher::ReaperLoop() {
  while (!stop_) {
    // The queue depth gauge follows jobs submitted to any replica: sampled twice a second.
    for (std::int64_t waited = 0; waited < options_.reaper_interval_ms && !stop_; waited += 100) {
      if (waited % 500 == 0) UpdateQueueDepth();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (stop_) return;
    auto report = store_.ReclaimStale(options_.consumer_id, options_.reaper_min_idle_ms, options_.max_attempts);
    if (report.ok() && (!report->requeued.empty() || !report->dead.empty())) {
      for (const auto& id : report->requeued)
        telemetry::Log(telemetry::LogLevel::kWarn, {}, id, "reaper requeued a job of a stopped scheduler");
      for (const auto& id : report->dead)
        telemetry::Log(telemetry::LogLevel::kWarn, {}, id, "reaper dead-lettered a job of a stopped scheduler");
    }
  }
}

void JobDispatcher::RunJob(const jobs::ClaimedJob& job) {
  const std::string& id = job.record.job_id;
  const jobs::DeliveryHandle& handle = job.handle;
  v1::StoredJob stored;
  if (!stored.ParseFromString(job.record.payload)) {
    telemetry::Log(telemetry::LogLevel::kError, {}, id, "the stored request cannot be read");
    (void)Persist("failure", id, [&] { return store_.Fail(id, handle, "the stored request cannot be read"); });
    return;
  }
  const int attempt = job.record.attempts + 1;
  // The trace the job continues, and the wait in the queue as a span of it: from the job's
  // creation (backdated) to now, the claim.
  const telemetry::SpanContext parent = StoredContext(job.record, stored);
  const std::string trace_id = parent.trace_id_hex();
  const std::int64_t claimed_ms = NowMs();
  const double queue_wait = std::max<std::int64_t>(0, claimed_ms - job.record.created_unix_ms) / 1000.0;
  {
    telemetry::Span queued = tracer_.StartSpan(
        "scheduler.queue", parent, telemetry::SpanKind::kInternal,
        job.record.created_unix_ms > 0 ? static_cast<std::uint64_t>(job.record.created_unix_ms) * 1'000'000ull : 0);
    queued.SetAttribute("job.id", id);
    queued.SetAttribute("model", job.record.model);
    queued.SetAttribute("priority", job.record.priority);
    queued.SetAttribute("attempt", attempt);
    queued.SetAttribute("queue_wait_seconds", queue_wait);
    queued.SetAttribute("consumer", options_.consumer_id);
  }
  if (metrics_ != nullptr) metrics_->ObserveQueueWait(queue_wait);
  telemetry::Log(telemetry::LogLevel::kInfo, trace_id, id, "job claimed",
                 {{"model", job.record.model}, {"attempt", std::to_string(attempt)},
                  {"queue_wait_seconds", std::to_string(queue_wait)}});
  auto last_beat = Clock::now();
  auto beat = [&] {
    if (Clock::now() - last_beat >= std::chrono::milliseconds(options_.heartbeat_ms)) {
      (void)store_.Heartbeat(handle);
      last_beat = Clock::now();
    }
  };
  auto cancel_requested = [&] {
    auto c = store_.CancelRequested(id);
    return c.ok() && *c;
  };
  auto finish_cancelled = [&] {
    telemetry::Log(telemetry::LogLevel::kInfo, trace_id, id, "job cancelled");
    const jobs::Outcome outcome{jobs::JobState::kCancelled, "", "cancelled while running",
                                Failure(id, CancelledError("cancelled")).SerializeAsString()};
    (void)Persist("cancellation", id, [&] { return store_.Finish(id, handle, outcome); });
  };

  // Wait for an executor with room for this model.
  std::string address, executor_name;
  while (address.empty()) {
    if (stop_) {
      telemetry::Log(telemetry::LogLevel::kInfo, trace_id, id, "stopping; job requeued");
      (void)store_.Requeue(handle);
      return;
    }
    if (cancel_requested()) return finish_cancelled();
    if (job.record.deadline_unix_ms > 0 && NowMs() >= job.record.deadline_unix_ms) {
      telemetry::Log(telemetry::LogLevel::kWarn, trace_id, id, "deadline passed waiting for an executor");
      const std::string why = "deadline passed waiting for an executor";
      const jobs::Outcome outcome{jobs::JobState::kFailed, "", why,
                                  Failure(id, Status(StatusCode::kDeadlineExceeded, why)).SerializeAsString()};
      (void)Persist("failure", id, [&] { return store_.Finish(id, handle, outcome); });
      return;
    }
    const auto snapshot = pool_.Snapshot();
    int pick;
    {
      std::lock_guard<std::mutex> lock(picker_mu_);
      pick = picker_.Pick(snapshot, job.record.model, stored.accepted().device_class());
    }
    if (pick >= 0) {
      address = snapshot[pick].address;
      executor_name = snapshot[pick].executor_id.empty() ? address : snapshot[pick].executor_id;
      pool_.NoteDispatched(address);
      break;
    }
    beat();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  (void)store_.MarkRunning(handle, executor_name);
  v1::JobEvent started;
  started.set_job_id(id);
  started.mutable_started()->set_executor(executor_name);
  started.mutable_started()->set_attempt(attempt);
  (void)store_.AppendEvent(id, started.SerializeAsString());

  const v1::RunRequest& run = stored.run();
  auto tok = catalog_.Tokenizer(job.record.model);
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer = tok.ok() ? *tok : nullptr;
  auto config = catalog_.Config(job.record.model, pool_.Snapshot());
  const std::int64_t mask_id = config.ok() ? config->mask_token_id : checkpoint::LladaConfig().mask_token_id;
  std::vector<std::int64_t> tokens(run.params().gen_length(), mask_id);

  grpc::ClientContext ctx;
  // The executor call, a child of the stored context; its own context goes out in the metadata
  // and in RunRequest.traceparent (for callers that read the field).
  telemetry::Span rpc = telemetry::StartClientSpan(tracer_, &ctx, parent, "unmask.v1.Executor/Run");
  rpc.SetAttribute("job.id", id);
  rpc.SetAttribute("model", job.record.model);
  rpc.SetAttribute("executor", executor_name);
  rpc.SetAttribute("executor.address", address);
  rpc.SetAttribute("attempt", attempt);
  rpc.SetAttribute("sampler", run.params().sampler());
  rpc.SetAttribute("gen_length", run.params().gen_length());
  rpc.SetAttribute("block_length", run.params().block_length());
  rpc.SetAttribute("steps", run.params().steps());
  rpc.SetAttribute("executor_wait_seconds", (NowMs() - claimed_ms) / 1000.0);
  telemetry::Log(telemetry::LogLevel::kInfo, trace_id, id, "job started",
                 {{"executor", executor_name}, {"attempt", std::to_string(attempt)}});
  if (job.record.deadline_unix_ms > 0)
    ctx.set_deadline(std::chrono::system_clock::time_point(std::chrono::milliseconds(job.record.deadline_unix_ms)));
  v1::RunRequest request = run;
  request.set_job_id(id);
  if (rpc.context().valid()) request.set_traceparent(rpc.traceparent());
  auto reader = pool_.Stub(address)->Run(&ctx, request);
  std::int64_t steps_received = 0;
  v1::RunEvent ev;
  bool cancelled = false;
  auto last_cancel_check = Clock::now();
  v1::Completed completed;
  bool have_completed = false;
  while (reader->Read(&ev)) {
    beat();
    if (Clock::now() - last_cancel_check > std::chrono::milliseconds(200)) {
      last_cancel_check = Clock::now();
      if (cancel_requested()) {
        cancelled = true;
        ctx.TryCancel();
      }
    }
    if (ev.has_step()) {
      ++steps_received;
      v1::JobEvent out;
      out.set_job_id(id);
      *out.mutable_step() = ev.step();
      for (int k = 0; k < ev.step().unmasked().positions_size(); ++k) {
        const auto pos = ev.step().unmasked().positions(k);
        if (pos >= 0 && pos < static_cast<std::int64_t>(tokens.size())) tokens[pos] = ev.step().unmasked().tokens(k);
      }
      if (stored.partial_text() && tokenizer) out.mutable_step()->set_partial_text(PartialText(*tokenizer, tokens, mask_id));
      (void)store_.AppendEvent(id, out.SerializeAsString());
    } else if (ev.has_completed()) {
      const auto& c = ev.completed();
      completed.mutable_ids()->CopyFrom(c.ids());
      completed.set_finish_reason(c.finish_reason());
      completed.set_sampler(c.sampler());
      completed.mutable_timings()->set_queued_seconds((NowMs() - job.record.created_unix_ms) / 1000.0 - c.running_seconds());
      completed.mutable_timings()->set_running_seconds(c.running_seconds());
      completed.mutable_timings()->mutable_step_seconds()->CopyFrom(c.step_seconds());
      if (tokenizer) completed.set_text(Decode(*tokenizer, {c.ids().begin(), c.ids().end()}));
      have_completed = true;
    }
  }
  grpc::Status s = reader->Finish();
  rpc.SetAttribute("steps_received", steps_received);
  telemetry::SetRpcStatus(rpc, s);
  if (have_completed && s.ok()) {
    rpc.SetAttribute("finish_reason", completed.finish_reason());
    rpc.End();
    v1::JobEvent out;
    out.set_job_id(id);
    *out.mutable_completed() = completed;
    // The completed event and the result in one step: a watcher never sees an end that was not
    // stored (a scheduler killed between the two left one, and the job then ran again).
    const jobs::Outcome outcome{jobs::JobState::kSucceeded, completed.SerializeAsString(), "", out.SerializeAsString()};
    (void)Persist("result", id, [&] { return store_.Finish(id, handle, outcome); });
    telemetry::Log(telemetry::LogLevel::kInfo, trace_id, id, "job succeeded",
                   {{"executor", executor_name}, {"steps", std::to_string(steps_received)},
                    {"running_seconds", std::to_string(completed.timings().running_seconds())}});
    return;
  }
  rpc.End();
  if (cancelled) return finish_cancelled();
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE && attempt < options_.max_attempts) {
    // The executor went away mid-job: someone else finishes it.
    pool_.MarkUnhealthy(address);
    telemetry::Log(telemetry::LogLevel::kWarn, trace_id, id, "the executor failed the job; requeued",
                   {{"executor", executor_name}, {"error", s.error_message()}, {"attempt", std::to_string(attempt)}});
    (void)Persist("requeue", id, [&] { return store_.Requeue(handle).status(); });
    return;
  }
  const Status status = services::FromGrpcStatus(s.ok() ? grpc::Status(grpc::StatusCode::INTERNAL, "the executor ended without a result") : s);
  telemetry::Log(telemetry::LogLevel::kWarn, trace_id, id, "job failed",
                 {{"executor", executor_name}, {"error", status.ToString()}});
  const jobs::Outcome outcome{jobs::JobState::kFailed, "", status.ToString(), Failure(id, status).SerializeAsString()};
  (void)Persist("failure", id, [&] { return store_.Finish(id, handle, outcome); });
}

}  // namespace unmask::scheduler
