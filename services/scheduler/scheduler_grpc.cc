#include "services/scheduler/scheduler_grpc.h"

#include "services/common/grpc_status.h"
#include "services/scheduler/choices.h"

namespace unmask::scheduler {
namespace {

std::string Metadata(const grpc::ServerContext* ctx, const std::string& key) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(key);
  return it == md.end() ? "" : std::string(it->second.data(), it->second.size());
}

// The peer's address, and (`job_follows_call`: Generate, whose job exists for the caller
// that is waiting on it) the call's deadline when it has one.
CallInfo InfoOf(const grpc::ServerContext* ctx, bool job_follows_call) {
  CallInfo info;
  info.client = ClientAddress(ctx->peer());
  const auto deadline = ctx->deadline();
  if (job_follows_call && deadline != std::chrono::system_clock::time_point::max()) {
    info.deadline_unix_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline.time_since_epoch()).count();
  }
  return info;
}

}  // namespace

template <typename Fn>
grpc::Status SchedulerGrpcService::Serve(grpc::ServerContext* ctx, const char* method, Fn&& fn) {
  telemetry::ServerCall call(tracer_, metrics_, ctx, method, "unmask.v1.Scheduler");
  try {
    auto caller = core_.Authenticate(Metadata(ctx, "authorization"));
    if (!caller.ok()) return call.Finish(services::ToGrpcStatus(caller.status()));
    if (*caller != nullptr) call.span().SetAttribute("api_key.name", (*caller)->name);
    return call.Finish(services::ToGrpcStatus(fn(call, *caller)));
  } catch (const std::exception& e) {
    return call.Finish(grpc::Status(grpc::StatusCode::INTERNAL, std::string("scheduler: ") + e.what()));
  }
}

StatusOr<v1::SubmitResponse> SchedulerGrpcService::Accept(telemetry::ServerCall& call, const v1::GenerateRequest& r,
                                                          Caller caller, const CallInfo& info) {
  telemetry::Span& span = call.span();
  span.SetAttribute("model", r.model());
  span.SetAttribute("priority", r.priority());
  if (r.n() > 1) span.SetAttribute("n", r.n());
  // The job's trace context is this span's (not only the caller's header): the dispatcher and
  // the executor continue from here. With tracing off it is the caller's, passed on unchanged.
  UNMASK_ASSIGN_OR_RETURN(v1::SubmitResponse resp, core_.Accept(r, telemetry::FormatTraceparent(call.context()), caller, info));
  const v1::Accepted& a = resp.accepted();
  span.SetAttribute("job.id", resp.job_id());
  span.SetAttribute("duplicate", a.duplicate());
  span.SetAttribute("sampler", a.params().sampler().empty() ? "reference" : a.params().sampler());
  span.SetAttribute("gen_length", a.params().gen_length());
  span.SetAttribute("block_length", a.params().block_length());
  span.SetAttribute("steps", a.params().steps());
  span.SetAttribute("prompt_tokens", a.prompt_tokens());
  span.SetAttribute("adjustments", a.adjustments_size());
  std::string fields;
  for (const auto& adj : a.adjustments()) {
    fields += (fields.empty() ? "" : ",") + adj.field();
    span.SetAttribute("adjustment." + adj.field(), adj.asked() + " -> " + adj.applied() + " (" + adj.reason() + ")");
    if (metrics_ != nullptr && !a.duplicate()) metrics_->AddClamp(adj.field());
  }
  if (!fields.empty()) span.SetAttribute("adjusted_fields", fields);
  return resp;
}

void NoteJobEvent(telemetry::Span& span, const v1::JobEvent& ev) {
  if (!span.recording()) return;
  if (ev.has_started()) {
    span.AddEvent("started", {{"executor", ev.started().executor()}, {"attempt", ev.started().attempt()}});
  } else if (ev.has_completed()) {
    span.SetAttribute("job.state", "succeeded");
    span.SetAttribute("finish_reason", ev.completed().finish_reason());
  } else if (ev.has_failed()) {
    span.SetAttribute("job.state", "failed");
    span.SetAttribute("job.error_code", ev.failed().code());
    span.SetAttribute("job.error", ev.failed().message());
  }
}

grpc::Status SchedulerGrpcService::Submit(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                                          v1::SubmitResponse* resp) {
  return Serve(ctx, "Submit", [&](telemetry::ServerCall& call, Caller caller) -> Status {
    UNMASK_ASSIGN_OR_RETURN(*resp, Accept(call, *req, caller, InfoOf(ctx, /*job_follows_call=*/false)));
    return OkStatus();
  });
}

grpc::Status SchedulerGrpcService::Generate(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                                            grpc::ServerWriter<v1::JobEvent>* writer) {
  return Serve(ctx, "Generate", [&](telemetry::ServerCall& call, Caller caller) -> Status {
    UNMASK_ASSIGN_OR_RETURN(v1::SubmitResponse accepted,
                            Accept(call, *req, caller, InfoOf(ctx, /*job_follows_call=*/true)));
    return WatchChoices(
        core_, accepted,
        [&](const v1::JobEvent& ev) {
          NoteJobEvent(call.span(), ev);
          return writer->Write(ev);
        },
        [&] { return ctx->IsCancelled(); });
  });
}

grpc::Status SchedulerGrpcService::Watch(grpc::ServerContext* ctx, const v1::WatchRequest* req,
                                         grpc::ServerWriter<v1::JobEvent>* writer) {
  return Serve(ctx, "Watch", [&](telemetry::ServerCall& call, Caller) -> Status {
    call.span().SetAttribute("job.id", req->job_id());
    if (req->job_id().empty()) return InvalidArgumentError("job_id: must not be empty");
    return core_.Watch(
        req->job_id(),
        [&](const v1::JobEvent& ev) {
          NoteJobEvent(call.span(), ev);
          return writer->Write(ev);
        },
        [&] { return ctx->IsCancelled(); });
  });
}

grpc::Status SchedulerGrpcService::GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req, v1::JobInfo* resp) {
  return Serve(ctx, "GetJob", [&](telemetry::ServerCall& call, Caller) -> Status {
    call.span().SetAttribute("job.id", req->job_id());
    UNMASK_ASSIGN_OR_RETURN(*resp, core_.GetJob(req->job_id()));
    return OkStatus();
  });
}

grpc::Status SchedulerGrpcService::ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest* req,
                                            v1::ListJobsResponse* resp) {
  return Serve(ctx, "ListJobs", [&](telemetry::ServerCall& call, Caller) -> Status {
    call.span().SetAttribute("state", req->state());
    UNMASK_ASSIGN_OR_RETURN(*resp, core_.ListJobs(*req));
    return OkStatus();
  });
}

grpc::Status SchedulerGrpcService::CancelJob(grpc::ServerContext* ctx, const v1::CancelJobRequest* req,
                                             v1::CancelJobResponse* resp) {
  return Serve(ctx, "CancelJob", [&](telemetry::ServerCall& call, Caller) -> Status {
    call.span().SetAttribute("job.id", req->job_id());
    UNMASK_ASSIGN_OR_RETURN(std::string state, core_.CancelJob(req->job_id()));
    resp->set_state(state);
    call.span().SetAttribute("job.state", state);
    return OkStatus();
  });
}

grpc::Status SchedulerGrpcService::ListModels(grpc::ServerContext* ctx, const v1::ListServedModelsRequest*,
                                              v1::ListServedModelsResponse* resp) {
  return Serve(ctx, "ListModels", [&](telemetry::ServerCall&, Caller) -> Status {
    *resp = core_.ListModels();
    return OkStatus();
  });
}

}  // namespace unmask::scheduler
