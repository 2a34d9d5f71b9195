#include "services/loader/loader_grpc.h"

#include <chrono>
#include <thread>

#include "common/registry/device_budget.h"
#include "services/common/grpc_status.h"
#include "services/loader/load_trace.h"

namespace unmask::loader {
namespace {

// The one boundary where anything thrown below becomes a status.
template <typename Fn>
grpc::Status Guarded(Fn&& fn) {
  try {
    return services::ToGrpcStatus(fn());
  } catch (const std::exception& e) {
    return grpc::Status(grpc::StatusCode::INTERNAL, std::string("loader: ") + e.what());
  }
}

}  // namespace

template <typename Fn>
grpc::Status LoaderGrpcService::Serve(grpc::ServerContext* ctx, const char* method, Fn&& fn) {
  telemetry::ServerCall call(tracer_, metrics_, ctx, method, "unmask.v1.Loader");
  return call.Finish(Guarded([&]() -> Status { return fn(call); }));
}

void LoaderGrpcService::UpdateMemoryMetrics() {
  if (metrics_ == nullptr) return;
  metrics_->SetMemoryUsed(static_cast<double>(core_.resident_bytes()));
  auto budget = weights::DeviceBudget::ForCpu();
  if (budget.ok()) metrics_->SetMemoryBudget(static_cast<double>(budget->available_bytes()));
}

LoadHooks MetricsLoadHooks(telemetry::ServiceMetrics* metrics) {
  LoadHooks hooks;
  if (metrics == nullptr) return hooks;
  hooks.on_progress = [metrics](const std::string& model_id, const weights::LoadProgress& p) {
    if (p.bytes_total > 0)
      metrics->SetModelLoadProgress(model_id, static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total));
  };
  hooks.on_done = [metrics](const std::string& model_id, const Status& status, double seconds) {
    metrics->SetModelLoadProgress(model_id, status.ok() ? 1.0 : 0.0);
    if (status.ok()) metrics->ObserveModelLoad(seconds);
  };
  return hooks;
}

void ToProto(const weights::ModelInfo& info, v1::ModelInfo* out) {
  out->set_model_id(info.model_id);
  out->set_state(weights::ModelStateName(info.state));
  out->set_precision(info.precision.ToString());
  out->set_resident_bytes(info.resident_bytes);
  for (const auto& e : info.executors) out->add_executors(e);
  out->set_segment_name(info.segment_name);
  out->set_device(info.device);
  out->set_device_bytes(info.device_bytes);
  if (!info.error.ok()) out->set_error(info.error.ToString());
}

grpc::Status LoaderGrpcService::LoadModel(grpc::ServerContext* ctx, const v1::LoadModelRequest* req,
                                          grpc::ServerWriter<v1::LoadProgress>* writer) {
  return Serve(ctx, "LoadModel", [&](telemetry::ServerCall& call) -> Status {
    call.span().SetAttribute("model_id", req->model_id());
    call.span().SetAttribute("precision", req->precision());
    LoadTrace trace(tracer_, call.span(), req->model_id());
    auto info = core_.Load(
        req->model_id(), req->precision(),
        [&](const weights::LoadProgress& p) {
          if (ctx->IsCancelled()) return false;
          v1::LoadProgress msg;
          msg.set_phase(weights::LoadPhaseName(p.phase));
          msg.set_tensors_done(p.tensors_done);
          msg.set_tensors_total(p.tensors_total);
          msg.set_bytes_done(p.bytes_done);
          msg.set_bytes_total(p.bytes_total);
          msg.set_current_tensor(p.current_tensor);
          return writer->Write(msg);
        },
        [&trace](const weights::LoadProgress& p) { trace.OnProgress(p); });
    trace.End(info.ok());
    UpdateMemoryMetrics();
    if (!info.ok()) return info.status();
    call.span().SetAttribute("resident_bytes", info->resident_bytes);
    call.span().SetAttribute("precision.loaded", info->precision.ToString());
    v1::LoadProgress last;
    last.set_phase("done");
    ToProto(*info, last.mutable_model());
    writer->Write(last);
    return OkStatus();
  });
}

grpc::Status LoaderGrpcService::UnloadModel(grpc::ServerContext* ctx, const v1::UnloadModelRequest* req,
                                            v1::UnloadModelResponse* resp) {
  return Serve(ctx, "UnloadModel", [&](telemetry::ServerCall& call) -> Status {
    call.span().SetAttribute("model_id", req->model_id());
    call.span().SetAttribute("force", req->force());
    if (req->model_id().empty()) return InvalidFieldError("model_id", "must not be empty");
    UNMASK_ASSIGN_OR_RETURN(auto notified, core_.Unload(req->model_id(), req->force()));
    for (const auto& e : notified) resp->add_notified_executors(e);
    call.span().SetAttribute("notified_executors", static_cast<std::int64_t>(notified.size()));
    UpdateMemoryMetrics();
    return OkStatus();
  });
}

grpc::Status LoaderGrpcService::ListModels(grpc::ServerContext* ctx, const v1::ListModelsRequest*,
                                           v1::ListModelsResponse* resp) {
  return Serve(ctx, "ListModels", [&](telemetry::ServerCall& call) -> Status {
    for (const auto& info : core_.List()) ToProto(info, resp->add_models());
    resp->set_resident_bytes(core_.resident_bytes());
    auto budget = weights::DeviceBudget::ForCpu();
    if (budget.ok()) {
      resp->set_budget_bytes(budget->available_bytes());
      resp->set_budget_source(budget->source());
    }
    if (core_.device().cuda) {
      auto device_budget = DeviceBudgetFor(core_.device());
      if (device_budget.ok()) {
        resp->set_device_budget_bytes(device_budget->available_bytes());
        resp->set_device_budget_source(device_budget->source());
      }
    }
    call.span().SetAttribute("models", resp->models_size());
    UpdateMemoryMetrics();
    return OkStatus();
  });
}

grpc::Status LoaderGrpcService::AttachModel(grpc::ServerContext* ctx, const v1::AttachModelRequest* req,
                                            grpc::ServerWriter<v1::AttachEvent>* writer) {
  // The span covers the whole lease: it ends when the attachment does.
  return Serve(ctx, "AttachModel", [&](telemetry::ServerCall& call) -> Status {
    call.span().SetAttribute("model_id", req->model_id());
    call.span().SetAttribute("executor_id", req->executor_id());
    UNMASK_ASSIGN_OR_RETURN(auto attachment, core_.Attach(req->model_id(), req->executor_id()));
    v1::AttachEvent attached;
    attached.set_kind(v1::AttachEvent::ATTACHED);
    attached.set_segment_name(attachment.segment_name);
    attached.set_manifest_json(attachment.manifest_json);
    attached.set_device_handle(attachment.model.device_handle);
    ToProto(attachment.model, attached.mutable_model());
    if (!writer->Write(attached)) {
      (void)core_.Detach(req->model_id(), req->executor_id());
      return CancelledError("the executor went away before it was attached");
    }
    call.span().AddEvent("attached", {{"segment", attachment.segment_name}});
    // The stream is the lease: it ends when the executor cancels (or dies). A forced unload
    // revokes it: REVOKED, then the executor closes the stream once it let go of the weights.
    const bool revoked = core_.WaitRevoked(req->model_id(), req->executor_id(), [&] { return ctx->IsCancelled(); });
    if (revoked) {
      // The executor may still be computing from the weights (on a GPU, from the exported
      // allocation): the model is freed only once it closes the lease, after letting go.
      call.span().AddEvent("revoked");
      v1::AttachEvent ev;
      ev.set_kind(v1::AttachEvent::REVOKED);
      writer->Write(ev);
      while (!ctx->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      core_.ReleaseRevoked(req->model_id(), req->executor_id());
      call.span().AddEvent("released");
      return OkStatus();
    }
    (void)core_.Detach(req->model_id(), req->executor_id());  // may already be detached explicitly
    return CancelledError("attachment closed by the executor");
  });
}

grpc::Status LoaderGrpcService::DetachModel(grpc::ServerContext* ctx, const v1::DetachModelRequest* req,
                                            v1::DetachModelResponse*) {
  return Serve(ctx, "DetachModel", [&](telemetry::ServerCall& call) -> Status {
    call.span().SetAttribute("model_id", req->model_id());
    call.span().SetAttribute("executor_id", req->executor_id());
    return core_.Detach(req->model_id(), req->executor_id());
  });
}

}  // namespace unmask::loader
