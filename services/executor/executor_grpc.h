// gRPC adapter of the executor: request -> JobRequest, events -> stream, status converted once.
// Every handler runs inside one telemetry::ServerCall (a SERVER span per RPC, the request
// metrics); Run's span continues the caller's trace (metadata, else RunRequest.traceparent) and
// is the parent of the job's span.
#pragma once

#include "common/telemetry/grpc_tracing.h"
#include "common/telemetry/metrics.h"
#include "services/executor/executor_core.h"
#include "unmask/v1/executor.grpc.pb.h"

namespace unmask::executor {

class ExecutorGrpcService final : public v1::Executor::Service {
 public:
  // `metrics` may be null.
  ExecutorGrpcService(ExecutorCore& core, std::string model_id,
                      const telemetry::Tracer& tracer = telemetry::Tracer::Disabled(),
                      telemetry::ServiceMetrics* metrics = nullptr)
      : core_(core), model_id_(std::move(model_id)), tracer_(tracer), metrics_(metrics) {}

  grpc::Status Run(grpc::ServerContext* ctx, const v1::RunRequest* req, grpc::ServerWriter<v1::RunEvent>* writer) override;
  grpc::Status GetCapacity(grpc::ServerContext* ctx, const v1::GetCapacityRequest* req, v1::Capacity* resp) override;

 private:
  // The one wrapper of every handler: ServerCall around `fn(call)`, exceptions as INTERNAL.
  // `may_start_trace` false: a span only when the call continues a caller's trace.
  template <typename Fn>
  grpc::Status Serve(grpc::ServerContext* ctx, const char* method, const telemetry::SpanContext& fallback_parent,
                     Fn&& fn, bool may_start_trace = true);

  ExecutorCore& core_;
  std::string model_id_;
  const telemetry::Tracer& tracer_;
  telemetry::ServiceMetrics* metrics_;
};

// Fills a JobRequest from the wire form (generation::ParamsFromProto: the defaults of every door)
// and the model's token ids. Errors name the field.
StatusOr<JobRequest> JobRequestFromProto(const v1::RunRequest& req, const checkpoint::LladaConfig& config);

}  // namespace unmask::executor
