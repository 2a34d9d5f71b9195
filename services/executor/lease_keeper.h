// Keeps an executor's model in step with the loader, on a thread of its own:
// - the loader went away (restart): attach again, loading if needed; the running model keeps
//   serving meanwhile, and is kept as it is when the loader hands out the same segment again;
// - a forced unload revoked the model: stop serving it (new and queued jobs fail with
//   Unavailable, GetCapacity lists no model), let the running jobs finish, drop every use of the
//   weights, then close the lease so that the loader frees them (on a GPU the loader must not
//   free an allocation an executor still maps); then wait, without loading it ourselves, until
//   somebody loads the model again, and serve it at whatever precision it now has;
// - on a GPU computing from the loader's exported allocation (cuda-ipc), a loader that went
//   away took that allocation with it: stop serving at once and attach (and load) again.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/telemetry/tracer.h"
#include "common/util/status.h"
#include "services/executor/executor_core.h"
#include "services/executor/loader_client.h"

namespace unmask::executor {

struct LeaseKeeperHooks {
  // Builds the model over a newly attached segment.
  std::function<StatusOr<std::shared_ptr<const model::LladaModel>>(std::shared_ptr<const weights::AttachedModel>)>
      build;
  // The executor's health: false while it has no model to serve.
  std::function<void(bool)> set_serving;
  // Called with the lease each time one is acquired (for logging how weights reach the device).
  std::function<void(const LoaderLease&)> attached;
};

class LeaseKeeper {
 public:
  // `lease` is the attachment `core` serves from; `options` says how to attach again.
  // `tracer` must outlive the keeper.
  LeaseKeeper(AttachOptions options, std::unique_ptr<LoaderLease> lease, ExecutorCore& core, LeaseKeeperHooks hooks,
              const telemetry::Tracer& tracer, std::chrono::milliseconds poll = std::chrono::milliseconds(200));
  ~LeaseKeeper();  // stops the thread, then closes the lease

 private:
  void Loop();
  // Waits `d` or until stopped; false when stopped.
  bool Sleep(std::chrono::milliseconds d);
  void Reattach();
  void Release();
  // On a GPU, the loader's exported allocation dies with the loader: stop using it at once.
  void DropDeadDeviceCopy();
  // With no lease: attach again (loading the model only when load_again_), then serve.
  void AttachAgain();
  void Install(std::unique_ptr<LoaderLease> next);

  AttachOptions options_;
  std::unique_ptr<LoaderLease> lease_;
  ExecutorCore& core_;
  LeaseKeeperHooks hooks_;
  const telemetry::Tracer& tracer_;
  const std::chrono::milliseconds poll_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool load_again_ = false;  // keeper thread only
  std::thread thread_;
};

}  // namespace unmask::executor
