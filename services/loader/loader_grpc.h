// gRPC adapter of the loader: each handler converts the request, calls LoaderCore, converts
// the status once. No handler throws. Every handler runs inside one telemetry::ServerCall (a
// SERVER span per RPC, the request metrics); LoadModel adds a child span per layer.
#pragma once

#include "common/telemetry/grpc_tracing.h"
#include "common/telemetry/metrics.h"
#include "services/loader/loader_core.h"
#include "unmask/v1/loader.grpc.pb.h"

namespace unmask::loader {

class LoaderGrpcService final : public v1::Loader::Service {
 public:
  // `metrics` may be null.
  explicit LoaderGrpcService(LoaderCore& core, const telemetry::Tracer& tracer = telemetry::Tracer::Disabled(),
                             telemetry::ServiceMetrics* metrics = nullptr)
      : core_(core), tracer_(tracer), metrics_(metrics) {}

  grpc::Status LoadModel(grpc::ServerContext* ctx, const v1::LoadModelRequest* req,
                         grpc::ServerWriter<v1::LoadProgress>* writer) override;
  grpc::Status UnloadModel(grpc::ServerContext* ctx, const v1::UnloadModelRequest* req,
                           v1::UnloadModelResponse* resp) override;
  grpc::Status ListModels(grpc::ServerContext* ctx, const v1::ListModelsRequest* req,
                          v1::ListModelsResponse* resp) override;
  grpc::Status AttachModel(grpc::ServerContext* ctx, const v1::AttachModelRequest* req,
                           grpc::ServerWriter<v1::AttachEvent>* writer) override;
  grpc::Status DetachModel(grpc::ServerContext* ctx, const v1::DetachModelRequest* req,
                           v1::DetachModelResponse* resp) override;

 private:
  // The one wrapper of every handler: ServerCall around `fn(call)`, exceptions as INTERNAL.
  template <typename Fn>
  grpc::Status Serve(grpc::ServerContext* ctx, const char* method, Fn&& fn);
  // Resident bytes (and the budget) into the memory gauges.
  void UpdateMemoryMetrics();

  LoaderCore& core_;
  const telemetry::Tracer& tracer_;
  telemetry::ServiceMetrics* metrics_;
};

void ToProto(const weights::ModelInfo& info, v1::ModelInfo* out);

// LoaderCore's hooks feeding unmask_model_load_progress_ratio{model} (bytes done / bytes total,
// 1 when loaded, 0 after a failed load) and unmask_model_load_seconds. Null metrics: no hooks.
LoadHooks MetricsLoadHooks(telemetry::ServiceMetrics* metrics);

}  // namespace unmask::loader
