// The loader's gRPC-free bookkeeping: which models are loaded, at which precision, in which
// segment, and which executors have them attached.
//
// Lifecycle of a model id:  (absent) -GetOrLoad-> loading -> ready | failed
//   ready -Unload-> (absent), or unloading while forced past attached executors; an unloading
//   model disappears when its last executor detaches. failed is kept (for List) until the next
//   GetOrLoad retries or Unload removes it.
// Unloading unlinks the segment's name at once, so no new executor can attach; the memory
// itself is freed by the kernel only when the last mapping goes, so a forced unload never pulls
// memory from under an executor that still maps it.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/util/status.h"
#include "common/registry/device_budget.h"
#include "common/registry/model_paths.h"
#include "common/registry/progressive_loader.h"
#include "common/quant/quant_policy.h"

namespace unmask::weights {

enum class ModelState { kLoading, kReady, kFailed, kUnloading };
const char* ModelStateName(ModelState state);

struct ModelInfo {
  std::string model_id;
  ModelState state = ModelState::kLoading;
  PrecisionSpec precision;
  std::string segment_name;            // once ready
  std::uint64_t resident_bytes = 0;    // segment size once ready
  std::string device = "cpu";          // where executors find the weights: "cpu" or "cuda:N"
  std::string device_handle;           // CUDA IPC descriptor of the device copy, when device is cuda
  std::uint64_t device_bytes = 0;      // bytes of the device copy
  std::vector<std::string> executors;  // attached, sorted
  int waiters = 0;                     // GetOrLoad callers that joined the in-flight load (0 once it finished)
  Status error;                        // when failed
};

// Produces a loaded model; the registry calls it at most once per in-flight (id, precision).
using ModelLoader =
    std::function<StatusOr<std::shared_ptr<LoadedModel>>(const std::string& model_id, const PrecisionSpec& spec)>;

// A ModelLoader for model ids that are directories under `model_roots` (see ResolveModelDir).
// It refuses a model whose planned segment does not fit DeviceBudget::ForCpu()
// (ResourceExhausted) before creating anything.
ModelLoader DirectoryModelLoader(std::vector<std::string> model_roots, LoadProgressFn progress = {},
                                 LoadOptions options = {});

class ModelRegistry {
 public:
  explicit ModelRegistry(ModelLoader loader) : loader_(std::move(loader)) {}

  // The loaded model, loading it if needed. Concurrent callers for the same id and precision
  // share one load (they wait on the same future). A model id is loaded at one precision at a
  // time: asking for another one while it is loading, ready or unloading is FailedPrecondition.
  StatusOr<std::shared_ptr<const LoadedModel>> GetOrLoad(const std::string& model_id, const PrecisionSpec& spec);

  // Registers a model that is already in shared memory (a segment adopted from a previous
  // loader) as ready at `spec`, exactly as if GetOrLoad had loaded it: a later GetOrLoad at the
  // same precision returns it at once. AlreadyExists when the id is known in any state.
  Status Adopt(const std::string& model_id, const PrecisionSpec& spec, std::shared_ptr<LoadedModel> model);

  // Reference counting of executors per model. Attach needs a ready model and is idempotent
  // per executor; Detach of an executor that is not attached is NotFound.
  Status Attach(const std::string& model_id, const std::string& executor_id);
  Status Detach(const std::string& model_id, const std::string& executor_id);
  // Detaches an executor whose attachment a forced unload revoked, once it let go of the
  // weights: only from the model while it is still unloading, so that an attachment to the
  // model loaded again under the same id is kept. The last one out frees the model.
  void ReleaseRevoked(const std::string& model_id, const std::string& executor_id);
  // Detaches an executor (that went away) from every model; returns those model ids.
  std::vector<std::string> DetachExecutor(const std::string& executor_id);

  // Unloads a model. While executors are attached it is refused (FailedPrecondition naming
  // them) unless `force`; forced, the model goes to unloading and the returned list names the
  // executors to notify. Refused while loading.
  StatusOr<std::vector<std::string>> Unload(const std::string& model_id, bool force);

  StatusOr<ModelInfo> Get(const std::string& model_id) const;
  std::vector<ModelInfo> List() const;
  // Sum of the segment sizes of ready and unloading models.
  std::uint64_t resident_bytes() const;

 private:
  using LoadResult = StatusOr<std::shared_ptr<const LoadedModel>>;
  struct Entry {
    ModelState state = ModelState::kLoading;
    PrecisionSpec spec;
    std::shared_future<LoadResult> pending;  // while loading
    std::shared_ptr<LoadedModel> model;      // ready / unloading
    std::set<std::string> executors;
    int waiters = 0;
    Status error;
  };
  ModelInfo InfoLocked(const std::string& id, const Entry& e) const;
  // Unlinks the segment's name (a failure is kept as the entry's error). The registry's own
  // mapping goes when the entry is erased; GetOrLoad callers keep theirs.
  static void UnlinkSegment(Entry& e);

  ModelLoader loader_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> models_;
};

}  // namespace unmask::weights
