#include "services/scheduler/scheduler_grpc.h"

#include "services/common/grpc_status.h"

namespace unmask::scheduler {
namespace {

std::string Metadata(const grpc::ServerContext* ctx, const std::string& key) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(key);
  return it == md.end() ? "" : std::string(it->second.data(), it->second.size());
}

// Authentication, then `fn`; anything thrown becomes INTERNAL here and nowhere else.
template <typename Fn>
grpc::Status Handle(SchedulerCore& core, grpc::ServerContext* ctx, Fn&& fn) {
  try {
    Status auth = core.CheckApiKey(Metadata(ctx, "authorization"));
    if (!auth.ok()) return services::ToGrpcStatus(auth);
    return services::ToGrpcStatus(fn());
  } catch (const std::exception& e) {
    return grpc::Status(grpc::StatusCode::INTERNAL, std::string("scheduler: ") + e.what());
  }
}

}  // namespace

grpc::Status SchedulerGrpcService::Submit(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                                          v1::SubmitResponse* resp) {
  return Handle(core_, ctx, [&]() -> Status {
    UNMASK_ASSIGN_OR_RETURN(*resp, core_.Accept(*req, Metadata(ctx, "traceparent")));
    return OkStatus();
  });
}

grpc::Status SchedulerGrpcService::Generate(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                                            grpc::ServerWriter<v1::JobEvent>* writer) {
  return Handle(core_, ctx, [&]() -> Status {
    UNMASK_ASSIGN_OR_RETURN(v1::SubmitResponse accepted, core_.Accept(*req, Metadata(ctx, "traceparent")));
    return core_.Watch(
        accepted.job_id(), [&](const v1::JobEvent& ev) { return writer->Write(ev); },
        [&] { return ctx->IsCancelled(); }, accepted.accepted().duplicate());
  });
}

grpc::Status SchedulerGrpcService::Watch(grpc::ServerContext* ctx, const v1::WatchRequest* req,
                                         grpc::ServerWriter<v1::JobEvent>* writer) {
  return Handle(core_, ctx, [&]() -> Status {
    if (req->job_id().empty()) return InvalidArgumentError("job_id: must not be empty");
    return core_.Watch(
        req->job_id(), [&](const v1::JobEvent& ev) { return writer->Write(ev); }, [&] { return ctx->IsCancelled(); });
  });
}

grpc::Status SchedulerGrpcService::GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req, v1::JobInfo* resp) {
  return Handle(core_, ctx, [&]() -> Status {
    UNMASK_ASSIGN_OR_RETURN(*resp, core_.GetJob(req->job_id()));
    return OkStatus();
  });
}

grpc::Status SchedulerGrpcService::ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest* req,
                                            v1::ListJobsResponse* resp) {
  return Handle(core_, ctx, [&]() -> Status {
    UNMASK_ASSIGN_OR_RETURN(*resp, core_.ListJobs(*req));
    return OkStatus();
  });
}

grpc::Status SchedulerGrpcService::CancelJob(grpc::ServerContext* ctx, const v1::CancelJobRequest* req,
                                             v1::CancelJobResponse* resp) {
  return Handle(core_, ctx, [&]() -> Status {
    UNMASK_ASSIGN_OR_RETURN(std::string state, core_.CancelJob(req->job_id()));
    resp->set_state(state);
    return OkStatus();
  });
}

grpc::Status SchedulerGrpcService::ListModels(grpc::ServerContext* ctx, const v1::ListServedModelsRequest*,
                                              v1::ListServedModelsResponse* resp) {
  return Handle(core_, ctx, [&]() -> Status {
    *resp = core_.ListModels();
    return OkStatus();
  });
}

}  // namespace unmask::scheduler
