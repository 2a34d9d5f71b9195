// The one place where unmask::Status and grpc::Status meet (the codes are the same numbers).
#pragma once

#include <grpcpp/support/status.h>

#include "common/util/status.h"

namespace unmask::services {

grpc::Status ToGrpcStatus(const Status& status);
Status FromGrpcStatus(const grpc::Status& status);

}  // namespace unmask::services
