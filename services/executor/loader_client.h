// The executor's side of the loader: asks for a model (the load is idempotent), attaches, and
// holds the attachment stream open as a lease; reports when the loader went away (so that the
// executor re-attaches) or a forced unload revoked the model (so that the executor lets go).
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "common/telemetry/tracer.h"
#include "common/util/status.h"
#include "common/segment/weight_view.h"
#include "services/common/tls_options.h"
#include "unmask/v1/loader.grpc.pb.h"

namespace unmask::executor {

// What to attach to, and how.
struct AttachOptions {
  std::string loader_address;
  std::string model_id;
  std::string precision;  // asked of the loader; empty: the loader's default
  std::string executor_id;
  std::chrono::seconds timeout{30};  // how long to retry while the loader is unreachable
  // Where the executor computes. On cuda:N, when the loader holds the model on that GPU
  // (AttachEvent.device_handle), the lease opens that allocation (CUDA IPC) and the model
  // computes from it; if it cannot be opened, the executor copies from the segment instead and
  // device_sharing() says why.
  std::string device = "cpu";
  // Ask the loader to load the model first (idempotent). False after a forced unload: attach
  // only when somebody loaded the model again, rather than undo the unload.
  bool load = true;
  std::optional<tls::ClientTlsMaterial> loader_tls{};  // how to reach the loader; std::nullopt: plaintext
};

class LoaderLease {
 public:
  // Lets go of the weights, then closes the lease: the loader frees a revoked model only then.
  ~LoaderLease();
  // Loads (unless !options.load) and attaches, retrying until `options.timeout` while the
  // loader is unreachable. Traced as one trace: executor.attach with a client span per
  // LoadModel / AttachModel call (the latter ended once attached; the loader's AttachModel
  // span lasts as long as the lease).
  // `current` (optional) is the model the executor already maps: when the loader hands out the
  // same segment again (a restarted loader that adopted it), the lease keeps that mapping instead
  // of mapping the segment anew, and same_weights() says so.
  static StatusOr<std::unique_ptr<LoaderLease>> Acquire(const AttachOptions& options,
                                                        const telemetry::Tracer& tracer = telemetry::Tracer::Disabled(),
                                                        std::shared_ptr<const weights::AttachedModel> current = nullptr);
  std::shared_ptr<const weights::AttachedModel> model() const { return model_; }
  // True when Acquire was given `current` and the loader attached us to that very segment.
  bool same_weights() const { return same_weights_; }
  const std::string& precision() const { return precision_; }
  // How the weights reach the compute device: "shm" (mapped; CPU), "cuda-ipc" (the loader's GPU
  // copy), or "copy: <why>" (copied from the segment to the GPU).
  const std::string& device_sharing() const { return device_sharing_; }
  // True once the loader went away (the attachment stream ended).
  bool lost() const { return lost_.load(); }
  // True once a forced unload revoked the attachment. The loader keeps the weights until this
  // lease is destroyed: drop every use of model() first.
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
