// gRPC adapter of the executor: request -> JobRequest, events -> stream, status converted once.
#pragma once

#include "services/executor/executor_core.h"
#include "unmask/v1/executor.grpc.pb.h"

namespace unmask::executor {

class ExecutorGrpcService final : public v1::Executor::Service {
 public:
  explicit ExecutorGrpcService(ExecutorCore& core, std::string model_id)
      : core_(core), model_id_(std::move(model_id)) {}

  grpc::Status Run(grpc::ServerContext* ctx, const v1::RunRequest* req, grpc::ServerWriter<v1::RunEvent>* writer) override;
  grpc::Status GetCapacity(grpc::ServerContext* ctx, const v1::GetCapacityRequest* req, v1::Capacity* resp) override;

 private:
  ExecutorCore& core_;
  std::string model_id_;
};

// Fills a JobRequest from the wire form; unset fields take the reference's defaults
// (gen_length 128, block_length = gen_length, steps = gen_length). Errors name the field.
StatusOr<JobRequest> JobRequestFromProto(const v1::RunRequest& req, const checkpoint::LladaConfig& config);

}  // namespace unmask::executor
