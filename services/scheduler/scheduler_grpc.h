// gRPC adapter of the public API: authentication, deadline and trace context in, one call into
// SchedulerCore, status converted once. Every handler runs inside one telemetry::ServerCall (a
// SERVER span per RPC, the request metrics); the context of the accepting span (Generate,
// Submit) is stored with the job, so that the dispatcher's spans and the executor's continue
// that trace.
#pragma once

#include "common/telemetry/grpc_tracing.h"
#include "common/telemetry/metrics.h"
#include "services/scheduler/scheduler_core.h"
#include "unmask/v1/scheduler.grpc.pb.h"

namespace unmask::scheduler {

class SchedulerGrpcService final : public v1::Scheduler::Service {
 public:
  // `metrics` may be null.
  explicit SchedulerGrpcService(SchedulerCore& core, const telemetry::Tracer& tracer = telemetry::Tracer::Disabled(),
                                telemetry::ServiceMetrics* metrics = nullptr)
      : core_(core), tracer_(tracer), metrics_(metrics) {}

  grpc::Status Generate(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                        grpc::ServerWriter<v1::JobEvent>* writer) override;
  grpc::Status Submit(grpc::ServerContext* ctx, const v1::GenerateRequest* req, v1::SubmitResponse* resp) override;
  grpc::Status Watch(grpc::ServerContext* ctx, const v1::WatchRequest* req, grpc::ServerWriter<v1::JobEvent>* writer) override;
  grpc::Status GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req, v1::JobInfo* resp) override;
  grpc::Status ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest* req, v1::ListJobsResponse* resp) override;
  grpc::Status CancelJob(grpc::ServerContext* ctx, const v1::CancelJobRequest* req, v1::CancelJobResponse* resp) override;
  grpc::Status ListModels(grpc::ServerContext* ctx, const v1::ListServedModelsRequest* req,
                          v1::ListServedModelsResponse* resp) override;

 private:
  using Caller = const auth::ApiKey*;  // null when API keys are off
  // The one wrapper of every handler: ServerCall, authentication (the key's name on the span),
  // then `fn(call, caller)`; anything
  // thrown becomes INTERNAL here and nowhere else.
  template <typename Fn>
  grpc::Status Serve(grpc::ServerContext* ctx, const char* method, Fn&& fn);
  // Accepts the request with the call's context as the job's trace context, puts what will run
  // on the span (model, job id, sampler, gen_length / block_length / steps, adjustments) and
  // counts the clamps. `info`: the peer's address, and for Generate the call's deadline.
  StatusOr<v1::SubmitResponse> Accept(telemetry::ServerCall& call, const v1::GenerateRequest& request, Caller caller,
                                      const CallInfo& info);

  SchedulerCore& core_;
  const telemetry::Tracer& tracer_;
  telemetry::ServiceMetrics* metrics_;
};

// A job event on a Generate / Watch span: "started" as an event, the outcome as job.state
// (succeeded / failed, with job.error_code and job.error).
void NoteJobEvent(telemetry::Span& span, const v1::JobEvent& event);

}  // namespace unmask::scheduler
