// The executor's side of the loader: asks for a model (the load is idempotent), attaches, and
// holds the attachment stream open as a lease; reports when the lease ends (loader gone, or a
// forced unload) so that the executor re-attaches.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "common/telemetry/tracer.h"
#include "common/util/status.h"
#include "common/weights/weight_view.h"
#include "unmask/v1/loader.grpc.pb.h"

namespace unmask::executor {

class LoaderLease {
 public:
  ~LoaderLease();
  // Loads (idempotent) and attaches, retrying until `timeout` while the loader is unreachable.
  // Traced as one trace: executor.attach with a client span per LoadModel / AttachModel call
  // (the latter ended once attached; the loader's AttachModel span lasts as long as the lease).
  // `current` (optional) is the model the executor already maps: when the loader hands out the
  // same segment again (a restarted loader that adopted it), the lease keeps that mapping instead
  // of mapping the segment anew, and same_weights() says so.
  // `device`: where the executor computes. On cuda:N, when the loader holds the model on that
  // GPU (AttachEvent.device_handle), the lease opens that allocation (CUDA IPC) and the model
  // computes from it; if it cannot be opened, the executor copies from the segment instead and
  // device_sharing() says why.
  static StatusOr<std::unique_ptr<LoaderLease>> Acquire(const std::string& loader_address, const std::string& model_id,
                                                        const std::string& precision, const std::string& executor_id,
                                                        std::chrono::seconds timeout,
                                                        const telemetry::Tracer& tracer = telemetry::Tracer::Disabled(),
                                                        std::shared_ptr<const weights::AttachedModel> current = nullptr,
                                                        const std::string& device = "cpu");
  std::shared_ptr<const weights::AttachedModel> model() const { return model_; }
  // True when Acquire was given `current` and the loader attached us to that very segment.
  bool same_weights() const { return same_weights_; }
  const std::string& precision() const { return precision_; }
  // How the weights reach the compute device: "shm" (mapped; CPU), "cuda-ipc" (the loader's GPU
  // copy), or "copy: <why>" (copied from the segment to the GPU).
  const std::string& device_sharing() const { return device_sharing_; }
  // True once the attachment ended: revoked by a forced unload, or the loader went away.
  bool lost() const { return lost_.load(); }
  bool revoked() const { return revoked_.load(); }

 private:
  LoaderLease() = default;
  std::unique_ptr<v1::Loader::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReader<v1::AttachEvent>> reader_;
  std::shared_ptr<const weights::AttachedModel> model_;
  std::string precision_;
  std::string device_sharing_ = "shm";
  std::thread watcher_;
  bool same_weights_ = false;
  std::atomic<bool> lost_{false}, revoked_{false};
};

}  // namespace unmask::executor
