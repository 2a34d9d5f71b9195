// Trace context over gRPC: `traceparent` / `tracestate` travel as request metadata (lower-case
// keys, as gRPC requires), read on the server from ServerContext::client_metadata() and written
// on the client with ClientContext::AddMetadata.
//
// Why an explicit wrapper rather than gRPC 1.51's experimental server interceptors: a handler
// needs its span (to add attributes and step events, to store the traceparent with a job, and to
// inject it into the calls it makes), and an interceptor has no supported way to hand an object
// to the handler. A ServerCall at the top of each handler does that, records the request
// metric from the same place, and costs nothing when tracing is off. Usage:
//
//   grpc::Status Svc::Unload(grpc::ServerContext* ctx, const Req* req, Resp* resp) {
//     telemetry::ServerCall call(tracer_, metrics_, ctx, "UnloadModel");
//     call.span().SetAttribute("model_id", req->model_id());
//     return call.Finish(Guarded([&] { ... }));
//   }
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <string>
#include <string_view>

#include "common/telemetry/span.h"
#include "common/telemetry/tracer.h"

namespace unmask::telemetry {

class ServiceMetrics;

inline constexpr char kTraceparentKey[] = "traceparent";
inline constexpr char kTracestateKey[] = "tracestate";

// The caller's context from the request metadata; invalid when there is none or it is malformed
// (a bad traceparent starts a new trace rather than failing the request, as W3C asks).
SpanContext ExtractContext(const grpc::ServerContext& ctx);
// Adds traceparent (and tracestate when set) to an outgoing call. Nothing when !context.valid().
void InjectContext(grpc::ClientContext* ctx, const SpanContext& context);

// A SERVER span for one RPC: child of the incoming traceparent, else of `fallback_parent` (a
// context the request carries in a field of its own, e.g. RunRequest.traceparent), else a new
// root. Attributes: rpc.system=grpc, rpc.method, rpc.service (when given), network.peer.address
// (gRPC peer string).
Span StartServerSpan(const Tracer& tracer, const grpc::ServerContext* ctx, std::string_view method,
                     std::string_view service = {}, const SpanContext& fallback_parent = {});
// A CLIENT span for an outgoing RPC, child of `parent`, injected into `ctx`.
Span StartClientSpan(const Tracer& tracer, grpc::ClientContext* ctx, const SpanContext& parent,
                     std::string_view method);
// Puts rpc.grpc.status_code on the span and sets its status (error with the message unless OK).
void SetRpcStatus(Span& span, const grpc::Status& status);

// "OK", "CANCELLED", ... "UNAUTHENTICATED" (the names google.rpc.Code uses); "UNKNOWN" otherwise.
const char* GrpcCodeName(grpc::StatusCode code);

// The wrapper every handler uses: the server span plus the request metric.
class ServerCall {
 public:
  // `metrics` may be null (no metrics wired). `fallback_parent`: the parent when the metadata
  // carries no (valid) traceparent; see StartServerSpan.
  ServerCall(const Tracer& tracer, ServiceMetrics* metrics, const grpc::ServerContext* ctx, std::string_view method,
             std::string_view service = {}, const SpanContext& fallback_parent = {});
  // A call never Finish()ed (an exception went past it) counts as UNKNOWN.
  ~ServerCall();
  ServerCall(const ServerCall&) = delete;
  ServerCall& operator=(const ServerCall&) = delete;

  Span& span() { return span_; }
  // The context to store with jobs and inject into calls made on this request's behalf.
  const SpanContext& context() const { return span_.context(); }
  // Records the outcome (span status, requests_total{method,code}, duration) and ends the span.
  // Returns `status` so a handler can `return call.Finish(...)`.
  grpc::Status Finish(grpc::Status status);

 private:
  ServiceMetrics* metrics_;
  std::string method_;
  std::chrono::steady_clock::time_point start_;
  Span span_;
  bool finished_ = false;
};

}  // namespace unmask::telemetry
