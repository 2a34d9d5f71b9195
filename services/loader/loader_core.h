// The loader's logic, free of gRPC: loads checkpoints found under the model roots into shared
// memory (one segment per model), lends them to executors with reference counting, and lets
// several callers watch the same load.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/util/status.h"
#include "common/registry/model_registry.h"
#include "common/registry/progressive_loader.h"
#include "common/registry/segment_adoption.h"
#include "services/loader/loader_device.h"

namespace unmask::loader {

struct LoaderOptions {
  std::vector<std::string> model_roots;
  std::string default_precision = "bf16";
  // Where AdoptLeftoverSegments looks, and for which file names (tests narrow the prefix).
  std::string shm_dir = "/dev/shm";
  std::string segment_prefix = "unmask-";
  // cpu, or cuda:N to also hold every model on that GPU for CUDA IPC (see loader_device.h).
  LoaderDevice device;
};

// Seams for metrics (the core stays free of gRPC and of the telemetry library). Both are called
// on the thread that runs a load, once per load however many callers share it.
struct LoadHooks {
  // Every progress update.
  std::function<void(const std::string& model_id, const weights::LoadProgress&)> on_progress;
  // The load ended (ok or not) after `seconds`.
  std::function<void(const std::string& model_id, const Status& status, double seconds)> on_done;
};

// Called on the loading thread for every progress update (not only the latest one a watcher
// happens to see), e.g. to trace the load tensor by tensor.
using LoadObserver = std::function<void(const weights::LoadProgress&)>;

// The latest progress of one model's load, watched by every caller of that load.
class LoadBoard {
 public:
  // Sets the latest progress and calls every observer (on the caller's thread, under the lock).
  void Update(const weights::LoadProgress& progress);
  // Waits up to `timeout` for a version newer than `seen`; on success updates `seen` and `out`.
  bool WaitNewer(std::uint64_t& seen, weights::LoadProgress& out, std::chrono::milliseconds timeout);
  // Observers see every Update from Subscribe until Unsubscribe returns.
  std::uint64_t Subscribe(LoadObserver observer);
  void Unsubscribe(std::uint64_t id);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t version_ = 0;
  weights::LoadProgress latest_;
  std::uint64_t next_observer_ = 0;
  std::map<std::uint64_t, LoadObserver> observers_;
};

class LoaderCore {
 public:
  explicit LoaderCore(LoaderOptions options, LoadHooks hooks = {});

  // Loads `model_id` (a directory under a model root) or joins the load already under way, and
  // calls on_progress on this thread for each progress change until the load ends. A callback
  // returning false stops the watching (Cancelled), not the load, which other callers may share.
  // `observer` (optional) sees every update of the load from now until this call returns, on the
  // loading thread; nothing when the model is already loaded.
  StatusOr<weights::ModelInfo> Load(const std::string& model_id, const std::string& precision,
                                    const std::function<bool(const weights::LoadProgress&)>& on_progress,
                                    LoadObserver observer = {});
  // Refused while attached unless force; with force, returns the executors that were told.
  StatusOr<std::vector<std::string>> Unload(const std::string& model_id, bool force);
  std::vector<weights::ModelInfo> List() const { return registry_.List(); }
  std::uint64_t resident_bytes() const { return registry_.resident_bytes(); }

  struct Attachment {
    std::string segment_name;
    std::string manifest_json;
    weights::ModelInfo model;  // its device_handle: the GPU copy to open, when there is one
  };
  StatusOr<Attachment> Attach(const std::string& model_id, const std::string& executor_id);
  Status Detach(const std::string& model_id, const std::string& executor_id);
  // Blocks until the attachment is revoked by a forced unload (true) or stop() says so (false).
  bool WaitRevoked(const std::string& model_id, const std::string& executor_id, const std::function<bool()>& stop);
  // A revoked executor let go of the weights (it closed its lease): the model is freed when it
  // was the last. A model loaded again under the same id keeps the executor's new attachment.
  void ReleaseRevoked(const std::string& model_id, const std::string& executor_id);

  // Finds the complete segments a previous loader of these model roots left behind (killed,
  // crashed, or stopped with --keep-segments-on-exit) and serves them as ready models, with no
  // checkpoint read; partial or corrupt leftovers are unlinked. With `adopt` false, complete
  // leftovers are unlinked too. Segments whose owner still runs are never touched. Call it
  // before serving; the result says what happened to each segment, for the log.
  weights::LeftoverScan AdoptLeftoverSegments(bool adopt);

  StatusOr<weights::PrecisionSpec> ResolvePrecision(const std::string& precision) const;
  const LoaderDevice& device() const { return options_.device; }

 private:
  std::shared_ptr<LoadBoard> BoardFor(const std::string& model_id);

  LoaderOptions options_;
  LoadHooks hooks_;
  weights::ModelRegistry registry_;
  std::mutex mu_;
  std::condition_variable revoked_cv_;
  std::map<std::string, std::shared_ptr<LoadBoard>> boards_;
  std::set<std::pair<std::string, std::string>> revoked_;  // (model, executor)
};

}  // namespace unmask::loader
