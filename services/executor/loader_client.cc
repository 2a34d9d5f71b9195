#include "services/executor/loader_client.h"

#include <c10/core/Device.h>

#include <exception>

#include "common/telemetry/grpc_tracing.h"
#include "common/segment/cuda_ipc.h"
#include "services/common/grpc_status.h"
#include "services/common/grpc_tls.h"

namespace unmask::executor {

LoaderLease::~LoaderLease() {
  model_.reset();  // before the loader hears that the lease is closed
  if (ctx_) ctx_->TryCancel();
  if (watcher_.joinable()) watcher_.join();
}

namespace {

// One attempt: load (or join the load) and attach. Unavailable when the loader is unreachable.
Status TryAttach(v1::Loader::Stub& stub, const AttachOptions& options, grpc::ClientContext& attach_ctx,
                 std::unique_ptr<grpc::ClientReader<v1::AttachEvent>>& reader, v1::AttachEvent& first,
                 const telemetry::Tracer& tracer, const telemetry::SpanContext& parent) {
  const std::string& model_id = options.model_id;
  if (options.load) {
    grpc::ClientContext ctx;
    ctx.set_wait_for_ready(false);
    telemetry::Span span = telemetry::StartClientSpan(tracer, &ctx, parent, "unmask.v1.Loader/LoadModel");
    v1::LoadModelRequest req;
    req.set_model_id(model_id);
    req.set_precision(options.precision);
    auto load = stub.LoadModel(&ctx, req);
    v1::LoadProgress p;
    while (load->Read(&p)) {
    }
    grpc::Status s = load->Finish();
    telemetry::SetRpcStatus(span, s);
    // FAILED_PRECONDITION: already loaded with another precision; attach to what is there.
    if (!s.ok() && s.error_code() != grpc::StatusCode::FAILED_PRECONDITION) return services::FromGrpcStatus(s);
  }
  telemetry::Span span = telemetry::StartClientSpan(tracer, &attach_ctx, parent, "unmask.v1.Loader/AttachModel");
  v1::AttachModelRequest req;
  req.set_model_id(model_id);
  req.set_executor_id(options.executor_id);
  reader = stub.AttachModel(&attach_ctx, req);
  if (!reader->Read(&first) || first.kind() != v1::AttachEvent::ATTACHED) {
    grpc::Status s = reader->Finish();
    telemetry::SetRpcStatus(span, s);
    return services::FromGrpcStatus(s).WithContext("attach to '" + model_id + "'");
  }
  span.SetAttribute("segment", first.segment_name());
  span.SetOk();
  return OkStatus();
}

// The CUDA device index of "cuda" / "cuda:N", or -1 for anything else (CPU), read the way the
// model reads its device (the executor checked the name at start).
int CudaIndex(const std::string& device) {
  try {
    const c10::Device d(device);
    return d.is_cuda() ? (d.has_index() ? d.index() : 0) : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

// Opens the loader's GPU copy of the data region into `model`; the reason when it cannot.
Status OpenDeviceCopy(weights::AttachedModel& model, const std::string& handle, int cuda_index) {
  UNMASK_ASSIGN_OR_RETURN(weights::cuda::IpcDescriptor descriptor, weights::cuda::IpcDescriptor::Parse(handle));
  if (descriptor.device != cuda_index)
    return FailedPreconditionError("the loader holds the model on cuda:" + std::to_string(descriptor.device) +
                                   ", this executor computes on cuda:" + std::to_string(cuda_index));
  UNMASK_ASSIGN_OR_RETURN(weights::cuda::DeviceImport opened, weights::cuda::DeviceImport::Open(descriptor));
  auto owner = std::make_shared<weights::cuda::DeviceImport>(std::move(opened));
  return model.SetDeviceRegion(cuda_index, owner->device_ptr(), owner->size(), handle, owner);
}

}  // namespace

StatusOr<std::unique_ptr<LoaderLease>> LoaderLease::Acquire(const AttachOptions& options,
                                                             const telemetry::Tracer& tracer,
                                                             std::shared_ptr<const weights::AttachedModel> current) {
  const std::string& model_id = options.model_id;
  std::unique_ptr<LoaderLease> lease(new LoaderLease());
  telemetry::Span span = tracer.StartSpan("executor.attach");
  span.SetAttribute("model_id", model_id);
  span.SetAttribute("executor.id", options.executor_id);
  span.SetAttribute("loader", options.loader_address);
  int attempts = 0;
  lease->stub_ = v1::Loader::NewStub(tls::CreateChannel(options.loader_address, options.loader_tls));
  const auto give_up = std::chrono::steady_clock::now() + options.timeout;
  v1::AttachEvent first;
  Status last;
  while (true) {
    lease->ctx_ = std::make_unique<grpc::ClientContext>();
    ++attempts;
    // Client spans for the first attempts only: a loader that is slow to come up must not turn
    // into thousands of failed-call spans (the attempts attribute still counts them).
    last = TryAttach(*lease->stub_, options, *lease->ctx_, lease->reader_, first,
                     attempts <= 5 ? tracer : telemetry::Tracer::Disabled(), span.context());
    span.SetAttribute("attempts", attempts);
    if (last.ok()) break;
    if (last.code() != StatusCode::kUnavailable || std::chrono::steady_clock::now() >= give_up) {
      span.SetError(last.ToString());
      return last;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const int cuda_index = CudaIndex(options.device);
  const bool wants_device_copy = cuda_index >= 0 && !first.device_handle().empty();
  // The same name and the same manifest: the very segment already mapped (names carry a random
  // part, so a new segment never takes the name of one still mapped by chance). On a GPU, also
  // the same device allocation: a restarted loader exports a new one.
  if (current && current->segment().name() == first.segment_name() &&
      current->manifest().ToJson() == first.manifest_json() &&
      (!wants_device_copy || current->device_handle() == first.device_handle())) {
    if (wants_device_copy && !current->device_handle().empty()) lease->device_sharing_ = "cuda-ipc";
    lease->model_ = std::move(current);
    lease->same_weights_ = true;
    span.SetAttribute("same_weights", true);
  } else {
    auto attached = weights::AttachedModel::Attach(first.segment_name());
    if (!attached.ok()) {
      span.SetError(attached.status().ToString());
      return attached.status();
    }
    if (wants_device_copy) {
      Status opened = OpenDeviceCopy(*attached, first.device_handle(), cuda_index);
      lease->device_sharing_ = opened.ok() ? "cuda-ipc" : "copy: " + opened.ToString();
    } else if (cuda_index >= 0) {
      lease->device_sharing_ = "copy: the loader holds no GPU copy (started without --device cuda:N)";
    }
    span.SetAttribute("device_sharing", lease->device_sharing_);
    lease->model_ = std::make_shared<weights::AttachedModel>(std::move(*attached));
  }
  span.SetAttribute("precision", first.model().precision());
  span.SetOk();
  lease->precision_ = first.model().precision();
  LoaderLease* raw = lease.get();
  lease->watcher_ = std::thread([raw] {
    v1::AttachEvent ev;
    while (raw->reader_->Read(&ev)) {
      if (ev.kind() == v1::AttachEvent::REVOKED) raw->revoked_ = true;
    }
    raw->reader_->Finish();
    raw->lost_ = true;
  });
  return lease;
}

}  // namespace unmask::executor
