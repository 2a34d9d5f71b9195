#include "services/scheduler/scheduler_core.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "common/generation/params_proto.h"
#include "common/generation/validate.h"
#include "services/scheduler/canvas_request.h"
#include "services/scheduler/chat_prompt.h"
#include "services/scheduler/choices.h"
#include "services/scheduler/clamp_adapter.h"
#include "common/tokenizer/continuation_text.h"
#include "services/scheduler/likelihood_request.h"
#include "services/scheduler/request_validation.h"

namespace unmask::scheduler {
namespace {

// The reason of Accept's refusal when --max-queue jobs are waiting (IsQueueFull).
constexpr char kQueueFull[] = "QUEUE_FULL";

// Bytes per element of an executor's reported compute type; 0 when it reports none (an executor
// older than the report): the clamp then assumes the scheduler's --executor-precision.
int ComputeBytes(const std::string& compute_precision) {
  auto bytes = ExecutorComputeBytes(compute_precision);
  return bytes.ok() ? *bytes : 0;
}

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

SchedulerCore::SchedulerCore(jobs::JobStore& store, Snapshots executors, ModelCatalog& catalog, Clamper clamp,
                             SchedulerOptions options)
    : store_(store), executors_(std::move(executors)), catalog_(catalog), clamp_(std::move(clamp)),
      options_(std::move(options)), client_jobs_(options_.limits.max_queued_jobs_per_client) {}

StatusOr<const auth::ApiKey*> SchedulerCore::Authenticate(const std::string& authorization) {
  if (!options_.api_keys) return static_cast<const auth::ApiKey*>(nullptr);
  UNMASK_ASSIGN_OR_RETURN(const auth::ApiKey* key, options_.api_keys->Authenticate(authorization));
  UNMASK_RETURN_IF_ERROR(options_.api_keys->AdmitRequest(*key));
  return key;
}

StatusOr<std::vector<std::int64_t>> SchedulerCore::EncodePrompt(const v1::GenerateRequest& r,
                                                                const checkpoint::LladaConfig& config,
                                                                v1::ToolUse* tool_use) {
  std::vector<std::int64_t> ids;
  if (r.prompt_case() == v1::GenerateRequest::kIds) {
    ids.assign(r.ids().ids().begin(), r.ids().ids().end());
  } else {
    UNMASK_ASSIGN_OR_RETURN(auto tok, catalog_.Tokenizer(r.model()));
    if (!tok) return FailedPreconditionError("model '" + r.model() + "' has no tokenizer (tokenizer.json, or vocab.json with merges.txt) under the scheduler's model roots; send ids");
    std::vector<std::int32_t> encoded;
    if (r.prompt_case() == v1::GenerateRequest::kText) {
      UNMASK_ASSIGN_OR_RETURN(encoded, tok->Encode(r.text(), /*parse_special_tokens=*/true));
    } else {
      UNMASK_ASSIGN_OR_RETURN(auto chat_template, catalog_.ChatTemplate(r.model()));
      UNMASK_ASSIGN_OR_RETURN(ChatPrompt chat, EncodeChatPrompt(*tok, chat_template.get(), r.chat(), r.model()));
      encoded = std::move(chat.ids);
      *tool_use = std::move(chat.tool_use);
    }
    ids.assign(encoded.begin(), encoded.end());
  }
  // The request field at fault: the ids given, or the text / messages that encoded to these.
  const std::string source = r.prompt_case() == v1::GenerateRequest::kText ? "text" : "chat.messages";
  if (ids.empty()) return InvalidArgumentError("prompt: encodes to no tokens").WithField(source);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= config.embedding_size)
      return InvalidArgumentError("ids[" + std::to_string(i) + "]: token id " + std::to_string(ids[i]) +
                                  " is outside the vocabulary [0, " + std::to_string(config.embedding_size) + ")")
          .WithField(r.prompt_case() == v1::GenerateRequest::kIds ? "ids[" + std::to_string(i) + "]" : source);
  }
  return ids;
}

StatusOr<generation::Canvas> SchedulerCore::RequestCanvas(const v1::GenerateRequest& r) {
  if (!WantsCanvas(r)) return generation::Canvas{};
  UNMASK_ASSIGN_OR_RETURN(auto tok, catalog_.Tokenizer(r.model()));
  return EncodeRequestCanvas(r, tok.get());
}

StatusOr<SchedulerCore::Placement> SchedulerCore::Place(ClampInput in, const std::vector<ExecutorSnapshot>& executors,
                                                        const std::string& model) const {
  // The largest budget of each kind among the healthy executors serving the model, and the
  // widest compute type they report (an fp32 executor needs more than a bf16 one).
  std::uint64_t accelerator_budget = 0, cpu_budget = 0;
  int accelerator_bytes = 0, cpu_bytes = 0;
  bool have_accelerator = false, have_cpu = false;
  for (const auto& e : executors) {
    if (!e.healthy || std::find(e.models.begin(), e.models.end(), model) == e.models.end()) continue;
    const int bytes = ComputeBytes(e.compute_precision);
    if (IsCpuDevice(e.device)) {
      have_cpu = true;
      cpu_budget = std::max(cpu_budget, FitBudget(e));
      cpu_bytes = std::max(cpu_bytes, bytes);
    } else {
      have_accelerator = true;
      accelerator_budget = std::max(accelerator_budget, FitBudget(e));
      accelerator_bytes = std::max(accelerator_bytes, bytes);
    }
  }
  if (!have_accelerator) {
    // One kind of executor (or none yet): fit the largest CPU budget, run anywhere.
    in.budget_bytes = cpu_budget;
    in.compute_dtype_bytes = cpu_bytes;
    UNMASK_ASSIGN_OR_RETURN(ClampOutput out, clamp_(in));
    return Placement{std::move(out), ""};
  }
  in.compute_dtype_bytes = accelerator_bytes;
  in.budget_bytes = accelerator_budget;
  auto on_accelerator = clamp_(in);
  if (on_accelerator.ok() || !have_cpu || on_accelerator.status().code() != StatusCode::kResourceExhausted) {
    UNMASK_RETURN_IF_ERROR(on_accelerator.status());
    return Placement{std::move(*on_accelerator), kDeviceClassAccelerator};
  }
  // Does not fit any GPU even at the minimum: a CPU executor takes it, clamped to its memory.
  in.budget_bytes = cpu_budget;
  in.compute_dtype_bytes = cpu_bytes;
  auto on_cpu = clamp_(in);
  if (!on_cpu.ok()) {
    return ResourceExhaustedError(on_accelerator.status().message() + "; a CPU executor cannot take it either: " +
                                  on_cpu.status().message())
        .WithReason(on_cpu.status().reason());
  }
  v1::Adjustment routed;
  routed.set_field("device");
  routed.set_asked(kDeviceClassAccelerator);
  routed.set_applied(kDeviceClassCpu);
  routed.set_reason("does not fit the largest GPU executor budget (" + std::to_string(accelerator_budget) +
                    " bytes) even at the minimum: " + on_accelerator.status().message() +
                    "; routed to a CPU executor (budget " + std::to_string(cpu_budget) + " bytes)");
  on_cpu->adjustments.insert(on_cpu->adjustments.begin(), std::move(routed));
  return Placement{std::move(*on_cpu), kDeviceClassCpu};
}

StatusOr<SchedulerCore::Prepared> SchedulerCore::Prepare(const v1::GenerateRequest& r, const std::string& traceparent,
                                                         const CallInfo& call) {
  UNMASK_RETURN_IF_ERROR(ValidateGenerateRequest(r));
  UNMASK_RETURN_IF_ERROR(CheckPromptLimits(r, options_.limits));
  const auto executors = executors_();
  UNMASK_ASSIGN_OR_RETURN(auto config, catalog_.Config(r.model(), executors));
  Prepared job;
  UNMASK_ASSIGN_OR_RETURN(auto prompt, EncodePrompt(r, config, job.stored.mutable_tool_use()));
  std::int64_t continuation_tokens = 0;
  if (r.params().has_likelihood() && r.prompt_case() == v1::GenerateRequest::kText) {
    UNMASK_ASSIGN_OR_RETURN(auto tok, catalog_.Tokenizer(r.model()));
    UNMASK_ASSIGN_OR_RETURN(tokenizer::EncodedPair pair,
                            tokenizer::EncodeContextAndContinuation(*tok, r.text(), r.continuation()));
    prompt = std::move(pair.ids);
    continuation_tokens = pair.continuation_tokens;
  }
  UNMASK_RETURN_IF_ERROR(CheckPromptTokens(prompt.size(), options_.limits));
  UNMASK_ASSIGN_OR_RETURN(generation::Canvas canvas, RequestCanvas(r));
  UNMASK_RETURN_IF_ERROR(CheckCanvasRoom(prompt.size(), canvas, config));
  v1::GenerationParams asked = LikelihoodJobParams(r.params(), continuation_tokens);
  UNMASK_RETURN_IF_ERROR(ApplyTemplateLength(canvas, asked));

  // The one conversion (defaults included) of every door, then the clamp. The suffix counts with
  // the prompt (the tokens around the generated region); a template's length is fixed.
  ClampInput in{config, {}, static_cast<std::int64_t>(prompt.size() + canvas.suffix.size()), 0, 0};
  in.fixed_gen_length = !canvas.region.empty();
  UNMASK_ASSIGN_OR_RETURN(in.params, generation::ParamsFromProto(asked, generation::DefaultSampler(config)));
  UNMASK_RETURN_IF_ERROR(generation::UnderField("params", generation::ValidateSamplerForModel(in.params.sampler, config)));
  generation::WithModelTokens(config, in.params);
  UNMASK_ASSIGN_OR_RETURN(Placement placed, Place(in, executors, r.model()));
  ClampOutput& out = placed.clamped;
  UNMASK_RETURN_IF_ERROR(
      generation::UnderField("params", generation::ValidateParams(out.params, config, in.prompt_length)));
  UNMASK_RETURN_IF_ERROR(CheckRequestCanvas(canvas, out.params, config));

  v1::RunRequest& run = *job.stored.mutable_run();
  run.set_model_id(r.model());
  for (auto id : prompt) run.add_prompt_ids(id);
  *run.mutable_params() = generation::ParamsToProto(out.params);
  if (!canvas.empty()) *run.mutable_canvas() = CanvasToProto(canvas);
  run.set_traceparent(traceparent);
  job.stored.set_partial_text(r.partial_text());
  v1::Accepted& accepted = *job.stored.mutable_accepted();
  *accepted.mutable_params() = run.params();
  for (const auto& a : out.adjustments) *accepted.add_adjustments() = a;
  accepted.set_prompt_tokens(static_cast<std::int64_t>(prompt.size()));
  accepted.set_device_class(placed.device_class);

  jobs::JobRecord& record = job.record;
  record.model = r.model();
  record.priority = r.priority();
  const double deadline_seconds = r.deadline_seconds() > 0 ? r.deadline_seconds() : options_.default_deadline_seconds;
  record.deadline_unix_ms = deadline_seconds > 0 ? NowMs() + static_cast<std::int64_t>(deadline_seconds * 1000) : 0;
  if (call.deadline_unix_ms > 0 && (record.deadline_unix_ms == 0 || call.deadline_unix_ms < record.deadline_unix_ms))
    record.deadline_unix_ms = call.deadline_unix_ms;
  record.idempotency_key = r.idempotency_key();
  record.traceparent = traceparent;
  return job;
}

StatusOr<SchedulerCore::Reserved> SchedulerCore::Reserve(int n, const auth::ApiKey* caller, const CallInfo& call) {
  // The caller's own job limit before the shared queue's: a key (or an anonymous client) at its
  // limit learns that first.
  const auto finished = [this](const std::string& job_id) {
    auto record = store_.Get(job_id);
    // A job the store no longer knows is over; one it cannot tell about right now still counts.
    if (!record.ok()) return record.status().code() == StatusCode::kNotFound;
    return jobs::IsTerminal(record->state);
  };
  Reserved reserved;
  for (int i = 0; i < n; ++i) {
    if (caller != nullptr && options_.api_keys) {
      UNMASK_ASSIGN_OR_RETURN(auth::JobReservation slot, options_.api_keys->ReserveJob(*caller, finished));
      reserved.keys.push_back(std::move(slot));
    } else if (caller == nullptr) {
      UNMASK_ASSIGN_OR_RETURN(ClientJobLimit::Slot slot, client_jobs_.Reserve(call.client, finished));
      reserved.clients.push_back(std::move(slot));
    }
  }
  UNMASK_ASSIGN_OR_RETURN(std::int64_t depth, store_.QueueDepth());
  if (depth + n > options_.max_queue)
    return QueueFullError("the queue is full (" + std::to_string(depth) + " jobs, the scheduler's --max-queue=" +
                              std::to_string(options_.max_queue) + ")" +
                              (n > 1 ? " for " + std::to_string(n) + " more" : "") + "; try again later",
                          options_.max_queue);
  return reserved;
}

StatusOr<v1::SubmitResponse> SchedulerCore::StoreChoices(const Prepared& job, int n, Reserved& reserved) {
  v1::SubmitResponse resp;
  std::vector<std::string> stored_now;  // to take back when a later choice cannot be stored
  for (int i = 0; i < n; ++i) {
    jobs::JobRecord record = job.record;
    const v1::StoredJob stored = ChoiceJob(job.stored, i);
    record.payload = stored.SerializeAsString();
    record.idempotency_key = ChoiceIdempotencyKey(job.record.idempotency_key, i);
    auto submitted = store_.Submit(record);
    if (!submitted.ok()) {
      for (const auto& id : stored_now) (void)store_.Cancel(id);
      return submitted.status();
    }
    if (i < static_cast<int>(reserved.keys.size())) reserved.keys[i].Commit(submitted->job_id);
    if (i < static_cast<int>(reserved.clients.size())) reserved.clients[i].Commit(submitted->job_id);
    if (!submitted->duplicate) stored_now.push_back(submitted->job_id);
    if (i == 0) {
      resp.set_job_id(submitted->job_id);
      *resp.mutable_accepted() = stored.accepted();
      if (submitted->duplicate) {
        // The first submit's acceptance stands; report it, not this one's.
        UNMASK_ASSIGN_OR_RETURN(jobs::JobRecord existing, store_.Get(submitted->job_id));
        v1::StoredJob first;
        if (first.ParseFromString(existing.payload)) *resp.mutable_accepted() = first.accepted();
        resp.mutable_accepted()->set_duplicate(true);
      }
    }
    if (n > 1) resp.mutable_accepted()->add_job_ids(submitted->job_id);
  }
  return resp;
}

StatusOr<v1::SubmitResponse> SchedulerCore::Accept(const v1::GenerateRequest& r, const std::string& traceparent,
                                                   const auth::ApiKey* caller, const CallInfo& call) {
  UNMASK_ASSIGN_OR_RETURN(Prepared job, Prepare(r, traceparent, call));
  const int n = ChoiceCount(r);
  UNMASK_ASSIGN_OR_RETURN(Reserved reserved, Reserve(n, caller, call));
  return StoreChoices(job, n, reserved);
}

Status QueueFullError(const std::string& message, std::int64_t limit) {
  return ResourceExhaustedError(message).WithReason(kQueueFull, {{"limit", std::to_string(limit)}});
}

bool IsQueueFull(const Status& status) {
  return status.code() == StatusCode::kResourceExhausted && status.reason() == kQueueFull;
}

v1::Failed FailedOf(const Status& status) {
  v1::Failed f;
  f.set_code(static_cast<int>(status.code()));
  f.set_message(status.message());
  if (const ErrorDetail* d = status.detail()) {
    f.set_field(d->field);
    f.set_reason(d->reason);
    f.mutable_metadata()->insert(d->metadata.begin(), d->metadata.end());
  }
  return f;
}

Status StatusOf(const v1::Failed& f) {
  const auto code = static_cast<StatusCode>(f.code());
  const StatusCode effective = code == StatusCode::kOk ? StatusCode::kInternal : code;
  if (f.field().empty() && f.reason().empty() && f.metadata().empty()) return Status(effective, f.message());
  return Status(effective, f.message(),
                ErrorDetail{f.field(), f.reason(), {f.metadata().begin(), f.metadata().end()}});
}

v1::JobEvent TerminalEventFromRecord(const jobs::JobRecord& record) {
  v1::JobEvent ev;
  ev.set_job_id(record.job_id);
  auto* failed = ev.mutable_failed();
  switch (record.state) {
    case jobs::JobState::kCancelled:
      failed->set_code(static_cast<int>(StatusCode::kCancelled));
      failed->set_message("cancelled");
      break;
    case jobs::JobState::kExpired:
      failed->set_code(static_cast<int>(StatusCode::kDeadlineExceeded));
      failed->set_message("the deadline passed while the job was queued");
      break;
    case jobs::JobState::kDead:
      failed->set_code(static_cast<int>(StatusCode::kAborted));
      failed->set_message("gave up after repeated executor failures: " + record.error);
      break;
    case jobs::JobState::kSucceeded: {
      v1::Completed c;
      if (c.ParseFromString(record.result)) {
        *ev.mutable_completed() = c;
        return ev;
      }
      failed->set_code(static_cast<int>(StatusCode::kDataLoss));
      failed->set_message("the stored result cannot be read");
      break;
    }
    default:
      *failed = FailedOf(jobs::ErrorOf(record));  // its stored code and detail (INTERNAL when none)
  }
  return ev;
}

Status SchedulerCore::Watch(const std::string& job_id, const std::function<bool(const v1::JobEvent&)>& emit,
                            const std::function<bool()>& stop, bool duplicate) {
  UNMASK_ASSIGN_OR_RETURN(jobs::JobRecord record, store_.Get(job_id));
  // The acceptance comes from the stored payload, so it is always the first event, whichever
  // replica accepted the job and however fast a dispatcher started it.
  v1::StoredJob stored;
  if (!stored.ParseFromString(record.payload)) return DataLossError("job " + job_id + ": the stored request cannot be read");
  v1::JobEvent accepted;
  accepted.set_job_id(job_id);
  *accepted.mutable_accepted() = stored.accepted();
  accepted.mutable_accepted()->set_duplicate(duplicate);
  if (!emit(accepted)) return OkStatus();
  std::int64_t next = 0;
  std::int64_t last_position = -1;
  while (!stop()) {
    UNMASK_ASSIGN_OR_RETURN(jobs::EventBatch batch, store_.ReadEvents(job_id, next, 250));
    for (const auto& bytes : batch.events) {
      v1::JobEvent ev;
      if (!ev.ParseFromString(bytes)) return DataLossError("job " + job_id + ": an event cannot be read");
      if (!emit(ev)) return OkStatus();
      if (ev.has_completed() || ev.has_failed()) return OkStatus();
    }
    next = batch.next_index;
    if (batch.finished) {
      // Ended without a terminal event in its log (cancelled while queued, expired, dead).
      UNMASK_ASSIGN_OR_RETURN(record, store_.Get(job_id));
      emit(TerminalEventFromRecord(record));
      return OkStatus();
    }
    // A queue position only while the job waits (a wait that brought no events): a running job's
    // steps would each cost a lookup in the store for nothing.
    if (!batch.events.empty()) continue;
    auto position = store_.Position(job_id);
    if (position.ok() && *position != last_position) {
      last_position = *position;
      v1::JobEvent ev;
      ev.set_job_id(job_id);
      ev.mutable_queued()->set_position(*position);
      auto depth = store_.QueueDepth();
      ev.mutable_queued()->set_depth(depth.ok() ? *depth : 0);
      if (!emit(ev)) return OkStatus();
    }
  }
  return CancelledError("watch ended by the client");
}

namespace {
v1::JobInfo InfoFromRecord(const jobs::JobRecord& r) {
  v1::JobInfo info;
  info.set_job_id(r.job_id);
  info.set_model(r.model);
  info.set_state(jobs::JobStateName(r.state));
  info.set_executor(r.executor);
  info.set_attempts(r.attempts);
  info.set_created_unix(r.created_unix_ms / 1000.0);
  v1::StoredJob stored;
  if (stored.ParseFromString(r.payload)) *info.mutable_params() = stored.accepted().params();
  if (r.state == jobs::JobState::kSucceeded) {
    v1::Completed c;
    if (c.ParseFromString(r.result)) *info.mutable_result() = c;
  } else if (jobs::IsTerminal(r.state)) {
    *info.mutable_error() = TerminalEventFromRecord(r).failed();
  }
  return info;
}
}  // namespace

StatusOr<v1::JobInfo> SchedulerCore::GetJob(const std::string& job_id) {
  if (job_id.empty()) return InvalidArgumentError("job_id: must not be empty");
  UNMASK_ASSIGN_OR_RETURN(jobs::JobRecord r, store_.Get(job_id));
  return InfoFromRecord(r);
}

StatusOr<v1::ListJobsResponse> SchedulerCore::ListJobs(const v1::ListJobsRequest& req) {
  jobs::ListFilter filter;
  if (!req.state().empty()) {
    auto state = jobs::ParseJobState(req.state());
    if (!state) return InvalidArgumentError("state: '" + req.state() + "' is not one of queued, running, succeeded, failed, cancelled, expired, dead");
    filter.state = *state;
  }
  if (req.limit() < 0 || req.limit() > 1000) return InvalidArgumentError("limit: must be in [0, 1000]");
  filter.limit = req.limit() == 0 ? 50 : req.limit();
  UNMASK_ASSIGN_OR_RETURN(auto records, store_.List(filter));
  v1::ListJobsResponse resp;
  for (const auto& r : records) *resp.add_jobs() = InfoFromRecord(r);
  return resp;
}

StatusOr<std::string> SchedulerCore::CancelJob(const std::string& job_id) {
  if (job_id.empty()) return InvalidArgumentError("job_id: must not be empty");
  UNMASK_ASSIGN_OR_RETURN(jobs::JobState state, store_.Cancel(job_id));
  return std::string(jobs::JobStateName(state));
}

v1::ListServedModelsResponse SchedulerCore::ListModels() const {
  std::map<std::string, v1::ModelEntry> models;
  for (const auto& e : executors_()) {
    if (!e.healthy) continue;
    for (const auto& m : e.models) {
      auto& entry = models[m];
      entry.set_model(m);
      entry.add_executors(e.executor_id.empty() ? e.address : e.executor_id);
      entry.set_precision(e.precision);
      entry.set_compute_precision(e.compute_precision);
      entry.set_compute_reason(e.compute_reason);
      entry.set_budget_bytes(std::max<std::uint64_t>(entry.budget_bytes(), e.budget_bytes));
    }
  }
  v1::ListServedModelsResponse resp;
  for (auto& [name, entry] : models) *resp.add_models() = entry;
  return resp;
}

}  // namespace unmask::scheduler
