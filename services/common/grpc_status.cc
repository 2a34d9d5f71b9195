#include "services/common/grpc_status.h"

namespace unmask::services {

grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(status.code())), status.message());
}

Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return OkStatus();
  return Status(static_cast<StatusCode>(static_cast<int>(status.error_code())), status.error_message());
}

}  // namespace unmask::services
