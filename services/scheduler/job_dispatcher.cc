#include "services/scheduler/job_dispatcher.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/telemetry/grpc_tracing.h"
#include "common/telemetry/log.h"
#include "common/telemetry/metrics.h"
#include "services/common/grpc_status.h"
#include "services/scheduler/scheduler_core.h"
#include "services/scheduler/tool_calls.h"
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

// Each logprob's token (and its alternatives) decoded alone, special tokens kept, for clients
// without the model's tokenizer.
void AddTokenText(const tokenizer::Tokenizer& tok, google::protobuf::RepeatedPtrField<v1::TokenLogprob>& logprobs) {
  auto text = [&tok](std::int64_t id) -> std::string {
    if (id < 0 || id > INT32_MAX || !tok.IdToToken(static_cast<std::int32_t>(id))) return "";
    auto decoded = tok.Decode(std::vector<std::int32_t>{static_cast<std::int32_t>(id)}, /*skip_special_tokens=*/false);
    return decoded.ok() ? *decoded : "";
  };
  for (auto& lp : logprobs) {
    lp.set_text(text(lp.token()));
    for (auto& top : *lp.mutable_top()) top.set_text(text(top.token()));
  }
}

// The trace a job continues: the context stored when it was accepted (no parent when there is
// none or it cannot be read: the job's spans then start a trace of their own).
telemetry::SpanContext StoredContext(const jobs::JobRecord& record, const v1::StoredJob& stored) {
  const std::string& tp = !record.traceparent.empty() ? record.traceparent : stored.run().traceparent();
  if (tp.empty()) return {};
  auto parsed = telemetry::ParseTraceparent(tp);
  return parsed.ok() ? *parsed : telemetry::SpanContext{};
}

// The result as the job stores it, from the executor's RunCompleted: the text, and for a chat
// with tools the calls read from it.
v1::Completed CompletedFrom(const v1::RunCompleted& c, std::int64_t created_unix_ms,
                            const tokenizer::Tokenizer* tokenizer, const std::string& job_id, const v1::ToolUse& tool_use) {
  v1::Completed completed;
  completed.mutable_ids()->CopyFrom(c.ids());
  completed.set_finish_reason(c.finish_reason());
  completed.set_sampler(c.sampler());
  completed.mutable_timings()->set_queued_seconds((NowMs() - created_unix_ms) / 1000.0 - c.running_seconds());
  completed.mutable_timings()->set_running_seconds(c.running_seconds());
  completed.mutable_timings()->mutable_step_seconds()->CopyFrom(c.step_seconds());
  completed.mutable_logprobs()->CopyFrom(c.logprobs());
  completed.mutable_prompt_logprobs()->CopyFrom(c.prompt_logprobs());
  if (c.has_likelihood()) *completed.mutable_likelihood() = c.likelihood();
  if (tokenizer) {
    AddTokenText(*tokenizer, *completed.mutable_prompt_logprobs());
    completed.set_text(Decode(*tokenizer, {c.ids().begin(), c.ids().end()}));
    AddTokenText(*tokenizer, *completed.mutable_logprobs());
    ParsedToolCalls calls = ReadToolCalls(tool_use, job_id, completed.text());
    if (!calls.calls.empty()) {
      completed.set_content(std::move(calls.content));
      for (auto& call : calls.calls) *completed.add_tool_calls() = std::move(call);
    }
  }
  return completed;
}

v1::JobEvent Failure(const std::string& job_id, const Status& s) {
  v1::JobEvent ev;
  ev.set_job_id(job_id);
  *ev.mutable_failed() = FailedOf(s);
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
    std::unique_lock<std::mutex> turn(claim_turn_);
    if (stop_) break;
    if (!Reserve()) {  // every executor full: the job stays queued until a slot frees
      pool_.WaitForRoom(std::chrono::milliseconds(50));
      continue;
    }
    auto claimed = store_.Claim(options_.consumer_id, 200);
    if (!claimed.ok() || !*claimed) Unreserve();
    if (!claimed.ok()) {
      if (claimed.status().code() != StatusCode::kDataLoss) {
        telemetry::Log(telemetry::LogLevel::kWarn, {}, {}, "claim failed", {{"error", claimed.status().ToString()}});
        // With the turn held: while the store fails, one retry every half second, not one a thread.
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
      continue;
    }
    if (!*claimed) continue;
    turn.unlock();
    UpdateQueueDepth();
    RunJob(**claimed);
  }
}

bool JobDispatcher::Reserve() {
  std::lock_guard<std::mutex> lock(picker_mu_);
  if (!picker_.MayClaim(pool_.Snapshot(), reserved_)) return false;
  ++reserved_;
  return true;
}

void JobDispatcher::Unreserve() {
  std::lock_guard<std::mutex> lock(picker_mu_);
  --reserved_;
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

// One claimed job while it runs: what its steps share.
struct JobDispatcher::RunningJob {
  RunningJob(const jobs::ClaimedJob& job)
      : claimed(job), id(job.record.job_id), handle(job.handle) {}
  const jobs::ClaimedJob& claimed;
  const std::string& id;
  const jobs::DeliveryHandle& handle;
  v1::StoredJob stored;
  int attempt = 1;
  telemetry::SpanContext parent;  // the trace the job continues
  std::string trace_id;
  std::int64_t claimed_ms = 0;
  Clock::time_point last_beat = Clock::now();
};

// What the executor's stream left: its status, the result (when it sent one), whether the job
// was cancelled meanwhile, and the still open CLIENT span of the call.
struct JobDispatcher::Relayed {
  grpc::Status status;
  v1::Completed completed;
  bool have_completed = false;
  bool cancelled = false;
  std::int64_t steps_received = 0;
  telemetry::Span rpc;
};

struct JobDispatcher::Placement {
  std::string address, executor_name;
};

void JobDispatcher::RunJob(const jobs::ClaimedJob& job) {
  const std::string& id = job.record.job_id;
  RunningJob run(job);
  // The slot Reserve counted for this job: released once the job is sent (then the executor's
  // running count has it) or ends before that.
  bool reserved = true;
  const auto release = [&] {
    if (std::exchange(reserved, false)) Unreserve();
  };
  if (!run.stored.ParseFromString(job.record.payload)) {
    release();
    telemetry::Log(telemetry::LogLevel::kError, {}, id, "the stored request cannot be read");
    (void)Persist("failure", id, [&] { return store_.Fail(id, job.handle, DataLossError("the stored request cannot be read")); });
    return;
  }
  NoteClaim(run);
  Placement placement;
  const bool placed = PlaceJob(run, &placement);
  release();
  if (!placed) return;
  (void)store_.MarkRunning(run.handle, placement.executor_name);
  v1::JobEvent started;
  started.set_job_id(id);
  started.mutable_started()->set_executor(placement.executor_name);
  started.mutable_started()->set_attempt(run.attempt);
  (void)store_.AppendEvent(id, started.SerializeAsString());
  Relayed relayed = RelayRun(run, placement);
  pool_.NoteFinished(placement.address);
  FinishJob(run, placement, relayed);
}

// Claim: the wait in the queue as a span of the job's trace, from the job's creation (backdated)
// to now, and the "job claimed" line.
void JobDispatcher::NoteClaim(RunningJob& run) {
  const jobs::JobRecord& record = run.claimed.record;
  run.attempt = record.attempts + 1;
  run.parent = StoredContext(record, run.stored);
  run.trace_id = run.parent.trace_id_hex();
  run.claimed_ms = NowMs();
  const double queue_wait = std::max<std::int64_t>(0, run.claimed_ms - record.created_unix_ms) / 1000.0;
  {
    telemetry::Span queued = tracer_.StartSpan(
        "scheduler.queue", run.parent, telemetry::SpanKind::kInternal,
        record.created_unix_ms > 0 ? static_cast<std::uint64_t>(record.created_unix_ms) * 1'000'000ull : 0);
    queued.SetAttribute("job.id", run.id);
    queued.SetAttribute("model", record.model);
    queued.SetAttribute("priority", record.priority);
    queued.SetAttribute("attempt", run.attempt);
    queued.SetAttribute("queue_wait_seconds", queue_wait);
    queued.SetAttribute("consumer", options_.consumer_id);
  }
  if (metrics_ != nullptr) metrics_->ObserveQueueWait(queue_wait);
  telemetry::Log(telemetry::LogLevel::kInfo, run.trace_id, run.id, "job claimed",
                 {{"model", record.model}, {"attempt", std::to_string(run.attempt)},
                  {"queue_wait_seconds", std::to_string(queue_wait)}});
}

void JobDispatcher::Beat(RunningJob& run) {
  if (Clock::now() - run.last_beat >= std::chrono::milliseconds(options_.heartbeat_ms)) {
    (void)store_.Heartbeat(run.handle);
    run.last_beat = Clock::now();
  }
}

bool JobDispatcher::CancelRequested(const std::string& job_id) {
  auto c = store_.CancelRequested(job_id);
  return c.ok() && *c;
}

void JobDispatcher::FinishCancelled(RunningJob& run) {
  telemetry::Log(telemetry::LogLevel::kInfo, run.trace_id, run.id, "job cancelled");
  const jobs::Outcome outcome{jobs::JobState::kCancelled, "", CancelledError("cancelled while running"),
                              Failure(run.id, CancelledError("cancelled")).SerializeAsString()};
  (void)Persist("cancellation", run.id, [&] { return store_.Finish(run.id, run.handle, outcome); });
}

// Waits for an executor with room for this model. False when the job ended here: requeued
// because the dispatcher stops, cancelled, or past its deadline.
bool JobDispatcher::PlaceJob(RunningJob& run, Placement* placement) {
  const jobs::JobRecord& record = run.claimed.record;
  while (true) {
    if (stop_) {
      telemetry::Log(telemetry::LogLevel::kInfo, run.trace_id, run.id, "stopping; job requeued");
      (void)store_.Requeue(run.handle);
      return false;
    }
    if (CancelRequested(run.id)) {
      FinishCancelled(run);
      return false;
    }
    if (record.deadline_unix_ms > 0 && NowMs() >= record.deadline_unix_ms) {
      telemetry::Log(telemetry::LogLevel::kWarn, run.trace_id, run.id, "deadline passed waiting for an executor");
      const Status why(StatusCode::kDeadlineExceeded, "deadline passed waiting for an executor");
      const jobs::Outcome outcome{jobs::JobState::kFailed, "", why, Failure(run.id, why).SerializeAsString()};
      (void)Persist("failure", run.id, [&] { return store_.Finish(run.id, run.handle, outcome); });
      return false;
    }
    const auto snapshot = pool_.Snapshot();
    int pick;
    {
      std::lock_guard<std::mutex> lock(picker_mu_);
      pick = picker_.Pick(snapshot, record.model, run.stored.accepted().device_class());
    }
    if (pick >= 0) {
      placement->address = snapshot[pick].address;
      placement->executor_name = snapshot[pick].executor_id.empty() ? placement->address : snapshot[pick].executor_id;
      pool_.NoteDispatched(placement->address);
      return true;
    }
    Beat(run);
    pool_.WaitForRoom(std::chrono::milliseconds(50));
  }
}

// The executor call, a child of the stored context; its own context goes out in the metadata
// and in RunRequest.traceparent (for callers that read the field).
telemetry::Span JobDispatcher::StartRunSpan(const RunningJob& run, const Placement& placement,
                                            grpc::ClientContext* ctx) {
  const v1::RunRequest& request = run.stored.run();
  telemetry::Span rpc = telemetry::StartClientSpan(tracer_, ctx, run.parent, "unmask.v1.Executor/Run");
  rpc.SetAttribute("job.id", run.id);
  rpc.SetAttribute("model", run.claimed.record.model);
  rpc.SetAttribute("executor", placement.executor_name);
  rpc.SetAttribute("executor.address", placement.address);
  rpc.SetAttribute("attempt", run.attempt);
  rpc.SetAttribute("sampler", request.params().sampler());
  rpc.SetAttribute("gen_length", request.params().gen_length());
  rpc.SetAttribute("block_length", request.params().block_length());
  rpc.SetAttribute("steps", request.params().steps());
  rpc.SetAttribute("executor_wait_seconds", (NowMs() - run.claimed_ms) / 1000.0);
  telemetry::Log(telemetry::LogLevel::kInfo, run.trace_id, run.id, "job started",
                 {{"executor", placement.executor_name}, {"attempt", std::to_string(run.attempt)}});
  return rpc;
}

// Relay: runs the job on the executor and streams its steps into the job's event log.
JobDispatcher::Relayed JobDispatcher::RelayRun(RunningJob& run, const Placement& placement) {
  const jobs::JobRecord& record = run.claimed.record;
  auto tok = catalog_.Tokenizer(record.model);
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer = tok.ok() ? *tok : nullptr;
  auto config = catalog_.Config(record.model, pool_.Snapshot());
  const std::int64_t mask_id = config.ok() ? config->mask_token_id : checkpoint::LladaConfig().mask_token_id;
  std::vector<std::int64_t> tokens(run.stored.run().params().gen_length(), mask_id);
  const auto& region = run.stored.run().canvas().region();  // a template's fixed tokens show from the start
  for (int i = 0; i < region.size() && i < static_cast<int>(tokens.size()); ++i)
    if (region[i] >= 0) tokens[i] = region[i];

  Relayed out;
  grpc::ClientContext ctx;
  out.rpc = StartRunSpan(run, placement, &ctx);
  if (record.deadline_unix_ms > 0)
    ctx.set_deadline(std::chrono::system_clock::time_point(std::chrono::milliseconds(record.deadline_unix_ms)));
  v1::RunRequest request = run.stored.run();
  request.set_job_id(run.id);
  if (out.rpc.context().valid()) request.set_traceparent(out.rpc.traceparent());
  auto reader = pool_.Stub(placement.address)->Run(&ctx, request);
  v1::RunEvent ev;
  auto last_cancel_check = Clock::now();
  while (reader->Read(&ev)) {
    Beat(run);
    if (Clock::now() - last_cancel_check > std::chrono::milliseconds(200)) {
      last_cancel_check = Clock::now();
      if (CancelRequested(run.id)) {
        out.cancelled = true;
        ctx.TryCancel();
      }
    }
    if (ev.has_step()) {
      ++out.steps_received;
      v1::JobEvent step;
      step.set_job_id(run.id);
      *step.mutable_step() = ev.step();
      for (int k = 0; k < ev.step().unmasked().positions_size(); ++k) {
        const auto pos = ev.step().unmasked().positions(k);
        if (pos >= 0 && pos < static_cast<std::int64_t>(tokens.size())) tokens[pos] = ev.step().unmasked().tokens(k);
      }
      if (run.stored.partial_text() && tokenizer)
        step.mutable_step()->set_partial_text(PartialText(*tokenizer, tokens, mask_id));
      if (tokenizer) {
        AddTokenText(*tokenizer, *step.mutable_step()->mutable_logprobs());
        AddTokenText(*tokenizer, *step.mutable_step()->mutable_prompt_logprobs());
      }
      (void)store_.AppendEvent(run.id, step.SerializeAsString());
    } else if (ev.has_completed()) {
      out.completed = CompletedFrom(ev.completed(), record.created_unix_ms, tokenizer.get(), run.id,
                                    run.stored.tool_use());
      out.have_completed = true;
    }
  }
  out.status = reader->Finish();
  return out;
}

// Finish: the result, a requeue (the executor went away) or the failure.
void JobDispatcher::FinishJob(RunningJob& run, const Placement& placement, Relayed& relayed) {
  const std::string& id = run.id;
  const grpc::Status& s = relayed.status;
  telemetry::Span& rpc = relayed.rpc;
  rpc.SetAttribute("steps_received", relayed.steps_received);
  telemetry::SetRpcStatus(rpc, s);
  if (relayed.have_completed && s.ok()) {
    const v1::Completed& completed = relayed.completed;
    rpc.SetAttribute("finish_reason", completed.finish_reason());
    rpc.End();
    v1::JobEvent out;
    out.set_job_id(id);
    *out.mutable_completed() = completed;
    // The completed event and the result in one step: a watcher never sees an end that was not
    // stored (a scheduler killed between the two left one, and the job then ran again).
    const jobs::Outcome outcome{jobs::JobState::kSucceeded, completed.SerializeAsString(), OkStatus(), out.SerializeAsString()};
    (void)Persist("result", id, [&] { return store_.Finish(id, run.handle, outcome); });
    telemetry::Log(telemetry::LogLevel::kInfo, run.trace_id, id, "job succeeded",
                   {{"executor", placement.executor_name}, {"steps", std::to_string(relayed.steps_received)},
                    {"running_seconds", std::to_string(completed.timings().running_seconds())}});
    return;
  }
  rpc.End();
  if (relayed.cancelled) return FinishCancelled(run);
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE && run.attempt < options_.max_attempts) {
    // The executor went away mid-job: someone else finishes it.
    pool_.MarkUnhealthy(placement.address);
    telemetry::Log(telemetry::LogLevel::kWarn, run.trace_id, id, "the executor failed the job; requeued",
                   {{"executor", placement.executor_name}, {"error", s.error_message()},
                    {"attempt", std::to_string(run.attempt)}});
    (void)Persist("requeue", id, [&] { return store_.Requeue(run.handle).status(); });
    return;
  }
  const Status status = services::FromGrpcStatus(s.ok() ? grpc::Status(grpc::StatusCode::INTERNAL, "the executor ended without a result") : s);
  telemetry::Log(telemetry::LogLevel::kWarn, run.trace_id, id, "job failed",
                 {{"executor", placement.executor_name}, {"error", status.ToString()}});
  const jobs::Outcome outcome{jobs::JobState::kFailed, "", status, Failure(id, status).SerializeAsString()};
  (void)Persist("failure", id, [&] { return store_.Finish(id, run.handle, outcome); });
}

}  // namespace unmask::scheduler
