// gRPC adapter of the public API: authentication, deadline and trace context in, one call into
// SchedulerCore, status converted once.
#pragma once

#include "services/scheduler/scheduler_core.h"
#include "unmask/v1/scheduler.grpc.pb.h"

namespace unmask::scheduler {

class SchedulerGrpcService final : public v1::Scheduler::Service {
 public:
  explicit SchedulerGrpcService(SchedulerCore& core) : core_(core) {}

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
  SchedulerCore& core_;
};

}  // namespace unmask::scheduler
