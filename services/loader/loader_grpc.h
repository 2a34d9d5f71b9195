// gRPC adapter of the loader: each handler converts the request, calls LoaderCore, converts
// the status once. No handler throws.
#pragma once

#include "services/loader/loader_core.h"
#include "unmask/v1/loader.grpc.pb.h"

namespace unmask::loader {

class LoaderGrpcService final : public v1::Loader::Service {
 public:
  explicit LoaderGrpcService(LoaderCore& core) : core_(core) {}

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
  LoaderCore& core_;
};

void ToProto(const weights::ModelInfo& info, v1::ModelInfo* out);

}  // namespace unmask::loader
