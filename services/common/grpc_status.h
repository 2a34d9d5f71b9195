// The one place where unmask::Status and grpc::Status meet (the codes are the same numbers).
//
// A Status's ErrorDetail travels in the grpc::Status's binary error details
// ("grpc-status-details-bin") as googleapis clients expect it: a serialized google.rpc.Status
// whose details hold a google.rpc.BadRequest (one FieldViolation: the detail's field, described
// by the message) when the field is set, and a google.rpc.ErrorInfo (reason, domain "unmask",
// metadata) when the reason is. FromGrpcStatus reads them back, so that a detail survives the
// executor -> scheduler and scheduler -> CLI hops.
#pragma once

#include <grpcpp/support/status.h>

#include "common/util/status.h"

namespace unmask::services {

// ErrorInfo.domain of unmask's reasons; FromGrpcStatus ignores ErrorInfos of other domains.
inline constexpr char kErrorDomain[] = "unmask";

grpc::Status ToGrpcStatus(const Status& status);
Status FromGrpcStatus(const grpc::Status& status);

}  // namespace unmask::services
