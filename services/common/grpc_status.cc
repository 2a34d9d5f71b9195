#include "services/common/grpc_status.h"

#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace unmask::services {

grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const auto code = static_cast<grpc::StatusCode>(static_cast<int>(status.code()));
  const ErrorDetail* detail = status.detail();
  if (detail == nullptr || (detail->field.empty() && detail->reason.empty() && detail->metadata.empty()))
    return grpc::Status(code, status.message());
  google::rpc::Status wire;
  wire.set_code(static_cast<int>(code));
  wire.set_message(status.message());
  if (!detail->field.empty()) {
    google::rpc::BadRequest bad;
    auto* violation = bad.add_field_violations();
    violation->set_field(detail->field);
    violation->set_description(status.message());
    wire.add_details()->PackFrom(bad);
  }
  if (!detail->reason.empty() || !detail->metadata.empty()) {
    google::rpc::ErrorInfo info;
    info.set_reason(detail->reason);
    info.set_domain(kErrorDomain);
    info.mutable_metadata()->insert(detail->metadata.begin(), detail->metadata.end());
    wire.add_details()->PackFrom(info);
  }
  return grpc::Status(code, status.message(), wire.SerializeAsString());
}

Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return OkStatus();
  const auto code = static_cast<StatusCode>(static_cast<int>(status.error_code()));
  google::rpc::Status wire;
  if (status.error_details().empty() || !wire.ParseFromString(status.error_details()))
    return Status(code, status.error_message());
  ErrorDetail detail;
  for (const auto& any : wire.details()) {
    google::rpc::BadRequest bad;
    google::rpc::ErrorInfo info;
    if (any.Is<google::rpc::BadRequest>() && any.UnpackTo(&bad)) {
      if (detail.field.empty() && bad.field_violations_size() > 0) detail.field = bad.field_violations(0).field();
    } else if (any.Is<google::rpc::ErrorInfo>() && any.UnpackTo(&info) && info.domain() == kErrorDomain) {
      detail.reason = info.reason();
      detail.metadata.insert(info.metadata().begin(), info.metadata().end());
    }
  }
  if (detail.field.empty() && detail.reason.empty() && detail.metadata.empty())
    return Status(code, status.error_message());
  return Status(code, status.error_message(), std::move(detail));
}

}  // namespace unmask::services
