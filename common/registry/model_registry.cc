#include "common/registry/model_registry.h"

#include <exception>

#include "common/segment/layout.h"

namespace unmask::weights {

const char* ModelStateName(ModelState state) {
  switch (state) {
    case ModelState::kLoading:
      return "loading";
    case ModelState::kReady:
      return "ready";
    case ModelState::kFailed:
      return "failed";
    case ModelState::kUnloading:
      return "unloading";
  }
  return "?";
}

ModelLoader DirectoryModelLoader(std::vector<std::string> model_roots, LoadProgressFn progress, LoadOptions options) {
  return [roots = std::move(model_roots), progress = std::move(progress), options = std::move(options)](
             const std::string& model_id, const PrecisionSpec& spec) -> StatusOr<std::shared_ptr<LoadedModel>> {
    UNMASK_ASSIGN_OR_RETURN(std::string dir, ResolveModelDir(roots, model_id));
    // Refuse up front what cannot fit, rather than failing (or pushing the machine into
    // swap/OOM) halfway through the copy. The planned data region is the segment minus a header.
    UNMASK_ASSIGN_OR_RETURN(checkpoint::LladaConfig config, checkpoint::LladaConfig::FromFile(dir + "/config.json"));
    UNMASK_ASSIGN_OR_RETURN(Manifest planned, PlanLayout(config, spec));
    UNMASK_ASSIGN_OR_RETURN(DeviceBudget budget, DeviceBudget::ForCpu());
    UNMASK_RETURN_IF_ERROR(
        budget.CheckFits(planned.totals.data_bytes, 0, "model '" + model_id + "' as " + spec.ToString()));
    UNMASK_ASSIGN_OR_RETURN(LoadedModel model, LoadModelDir(dir, spec, model_id, progress, options));
    return std::make_shared<LoadedModel>(std::move(model));
  };
}

namespace {
std::string JoinNames(const std::set<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}
}  // namespace

StatusOr<std::shared_ptr<const LoadedModel>> ModelRegistry::GetOrLoad(const std::string& model_id,
                                                                      const PrecisionSpec& spec) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = models_.find(model_id);
  if (it != models_.end() && it->second.state != ModelState::kFailed) {
    Entry& e = it->second;
    if (e.spec != spec) {
      return FailedPreconditionError("model '" + model_id + "' is " + ModelStateName(e.state) + " as " +
                                     e.spec.ToString() + "; unload it before loading it as " + spec.ToString());
    }
    if (e.state == ModelState::kReady) return std::shared_ptr<const LoadedModel>(e.model);
    if (e.state == ModelState::kUnloading)
      return UnavailableError("model '" + model_id +
                              "' is being unloaded (executors still attached: " + JoinNames(e.executors) + ")");
    std::shared_future<LoadResult> pending = e.pending;
    ++e.waiters;
    lock.unlock();
    return pending.get();
  }

  // This caller loads; later callers wait on `pending`.
  std::promise<LoadResult> promise;
  Entry fresh;
  fresh.spec = spec;
  fresh.pending = promise.get_future().share();
  models_[model_id] = std::move(fresh);
  lock.unlock();

  StatusOr<std::shared_ptr<LoadedModel>> loaded = InternalError("model loader threw an exception");
  try {
    loaded = loader_(model_id, spec);
  } catch (const std::exception& ex) {
    loaded = InternalError(std::string("model loader threw: ") + ex.what());
  }
  LoadResult result =
      loaded.ok() ? LoadResult(std::shared_ptr<const LoadedModel>(*loaded)) : LoadResult(loaded.status());
  if (!loaded.ok()) result = loaded.status().WithContext("loading model '" + model_id + "'");

  lock.lock();
  Entry& e = models_[model_id];  // a loading entry is never erased (Unload refuses it)
  e.pending = {};
  e.waiters = 0;
  if (result.ok()) {
    e.state = ModelState::kReady;
    e.model = *loaded;
  } else {
    e.state = ModelState::kFailed;
    e.error = result.status();
  }
  lock.unlock();
  promise.set_value(result);
  return result;
}

Status ModelRegistry::Adopt(const std::string& model_id, const PrecisionSpec& spec,
                            std::shared_ptr<LoadedModel> model) {
  if (!model || !model->segment.valid())
    return InvalidArgumentError("adopting model '" + model_id + "': no mapped segment");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(model_id);
  if (it != models_.end()) {
    return AlreadyExistsError("adopting segment '" + model->segment.name() + "': model '" + model_id + "' is already " +
                              ModelStateName(it->second.state));
  }
  Entry& e = models_[model_id];
  e.state = ModelState::kReady;
  e.spec = spec;
  e.model = std::move(model);
  return OkStatus();
}

Status ModelRegistry::Attach(const std::string& model_id, const std::string& executor_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(model_id);
  if (it == models_.end()) return NotFoundError("model '" + model_id + "' is not loaded");
  if (it->second.state != ModelState::kReady)
    return FailedPreconditionError("model '" + model_id + "' is " + ModelStateName(it->second.state) +
                                   "; executors attach only to ready models");
  it->second.executors.insert(executor_id);
  return OkStatus();
}

Status ModelRegistry::Detach(const std::string& model_id, const std::string& executor_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(model_id);
  if (it == models_.end()) return NotFoundError("model '" + model_id + "' is not loaded");
  if (it->second.executors.erase(executor_id) == 0)
    return NotFoundError("executor '" + executor_id + "' is not attached to model '" + model_id + "'");
  if (it->second.state == ModelState::kUnloading && it->second.executors.empty()) models_.erase(it);
  return OkStatus();
}

void ModelRegistry::ReleaseRevoked(const std::string& model_id, const std::string& executor_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(model_id);
  if (it == models_.end() || it->second.state != ModelState::kUnloading) return;
  it->second.executors.erase(executor_id);
  if (it->second.executors.empty()) models_.erase(it);
}

std::vector<std::string> ModelRegistry::DetachExecutor(const std::string& executor_id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> detached;
  for (auto it = models_.begin(); it != models_.end();) {
    if (it->second.executors.erase(executor_id) != 0) {
      detached.push_back(it->first);
      if (it->second.state == ModelState::kUnloading && it->second.executors.empty()) {
        it = models_.erase(it);
        continue;
      }
    }
    ++it;
  }
  return detached;
}

void ModelRegistry::UnlinkSegment(Entry& e) {
  if (!e.model) return;
  Status s = e.model->segment.Unlink();
  if (!s.ok() && s.code() != StatusCode::kNotFound) e.error = s;
}

StatusOr<std::vector<std::string>> ModelRegistry::Unload(const std::string& model_id, bool force) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(model_id);
  if (it == models_.end()) return NotFoundError("model '" + model_id + "' is not loaded");
  Entry& e = it->second;
  std::vector<std::string> executors(e.executors.begin(), e.executors.end());
  switch (e.state) {
    case ModelState::kLoading:
      return FailedPreconditionError("model '" + model_id + "' is still loading; unload it once the load finished");
    case ModelState::kFailed:
      models_.erase(it);
      return executors;
    case ModelState::kUnloading:
      return executors;
    case ModelState::kReady:
      break;
  }
  if (!executors.empty() && !force) {
    return FailedPreconditionError("model '" + model_id + "' is attached by executors [" + JoinNames(e.executors) +
                                   "]; detach them first or force the unload");
  }
  UnlinkSegment(e);
  if (executors.empty()) {
    models_.erase(it);
  } else {
    e.state = ModelState::kUnloading;
  }
  return executors;
}

ModelInfo ModelRegistry::InfoLocked(const std::string& id, const Entry& e) const {
  ModelInfo info;
  info.model_id = id;
  info.state = e.state;
  info.precision = e.spec;
  info.executors.assign(e.executors.begin(), e.executors.end());
  info.error = e.error;
  info.waiters = e.waiters;
  if (e.model) {
    info.segment_name = e.model->segment.name();
    info.resident_bytes = e.model->segment.size();
    const DeviceCopy& copy = e.model->device_copy;
    if (!copy.handle.empty()) {
      info.device = copy.device;
      info.device_handle = copy.handle;
      info.device_bytes = copy.bytes;
    }
  }
  return info;
}

StatusOr<ModelInfo> ModelRegistry::Get(const std::string& model_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(model_id);
  if (it == models_.end()) return NotFoundError("model '" + model_id + "' is not loaded");
  return InfoLocked(it->first, it->second);
}

std::vector<ModelInfo> ModelRegistry::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ModelInfo> out;
  for (const auto& [id, e] : models_) out.push_back(InfoLocked(id, e));
  return out;
}

std::uint64_t ModelRegistry::resident_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::uint64_t total = 0;
  for (const auto& [id, e] : models_) {
    if (e.model) total += e.model->segment.size();
  }
  return total;
}

}  // namespace unmask::weights
