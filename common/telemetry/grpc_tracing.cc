#include "common/telemetry/grpc_tracing.h"

#include "common/telemetry/metrics.h"

namespace unmask::telemetry {
namespace {

std::string_view FindMetadata(const grpc::ServerContext& ctx, const char* key) {
  const auto& md = ctx.client_metadata();
  const auto it = md.find(key);
  if (it == md.end()) return {};
  return std::string_view(it->second.data(), it->second.size());
}

}  // namespace

SpanContext ExtractContext(const grpc::ServerContext& ctx) {
  const std::string_view tp = FindMetadata(ctx, kTraceparentKey);
  if (tp.empty()) return {};
  auto parsed = ParseTraceparent(tp, FindMetadata(ctx, kTracestateKey));
  if (!parsed.ok()) return {};
  return *std::move(parsed);
}

void InjectContext(grpc::ClientContext* ctx, const SpanContext& context) {
  if (ctx == nullptr || !context.valid()) return;
  ctx->AddMetadata(kTraceparentKey, FormatTraceparent(context));
  if (!context.trace_state.empty()) ctx->AddMetadata(kTracestateKey, context.trace_state);
}

Span StartServerSpan(const Tracer& tracer, const grpc::ServerContext* ctx, std::string_view method,
                     std::string_view service, const SpanContext& fallback_parent) {
  SpanContext parent = ctx != nullptr ? ExtractContext(*ctx) : SpanContext{};
  if (!parent.valid()) parent = fallback_parent;
  Span span = tracer.StartSpan(method, parent, SpanKind::kServer);
  if (span.recording()) {
    span.SetAttribute("rpc.system", "grpc");
    span.SetAttribute("rpc.method", method);
    if (!service.empty()) span.SetAttribute("rpc.service", service);
    if (ctx != nullptr) span.SetAttribute("network.peer.address", ctx->peer());
  }
  return span;
}

Span StartClientSpan(const Tracer& tracer, grpc::ClientContext* ctx, const SpanContext& parent,
                     std::string_view method) {
  Span span = tracer.StartSpan(method, parent, SpanKind::kClient);
  if (span.recording()) {
    span.SetAttribute("rpc.system", "grpc");
    span.SetAttribute("rpc.method", method);
  }
  InjectContext(ctx, span.context());
  return span;
}

void SetRpcStatus(Span& span, const grpc::Status& status) {
  if (!span.recording()) return;
  span.SetAttribute("rpc.grpc.status_code", static_cast<int>(status.error_code()));
  if (status.ok()) {
    span.SetOk();
  } else {
    span.SetError(std::string(GrpcCodeName(status.error_code())) + ": " + status.error_message());
  }
}

const char* GrpcCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN";
  }
}

ServerCall::ServerCall(const Tracer& tracer, ServiceMetrics* metrics, const grpc::ServerContext* ctx,
                       std::string_view method, std::string_view service, const SpanContext& fallback_parent)
    : metrics_(metrics),
      method_(method),
      start_(std::chrono::steady_clock::now()),
      span_(StartServerSpan(tracer, ctx, method, service, fallback_parent)) {}

ServerCall::~ServerCall() {
  if (!finished_) Finish(grpc::Status(grpc::StatusCode::UNKNOWN, "handler left without a status"));
}

grpc::Status ServerCall::Finish(grpc::Status status) {
  if (finished_) return status;
  finished_ = true;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (metrics_ != nullptr) metrics_->RecordRpc(method_, status.error_code(), seconds);
  SetRpcStatus(span_, status);
  span_.End();
  return status;
}

}  // namespace unmask::telemetry
