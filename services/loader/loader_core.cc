#include "services/loader/loader_core.h"

#include <future>
#include <thread>

#include "common/segment/manifest.h"

namespace unmask::loader {

void LoadBoard::Update(const weights::LoadProgress& progress) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    latest_ = progress;
    ++version_;
    for (const auto& [id, observer] : observers_) observer(progress);
  }
  cv_.notify_all();
}

std::uint64_t LoadBoard::Subscribe(LoadObserver observer) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::uint64_t id = ++next_observer_;
  observers_.emplace(id, std::move(observer));
  return id;
}

void LoadBoard::Unsubscribe(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  observers_.erase(id);
}

bool LoadBoard::WaitNewer(std::uint64_t& seen, weights::LoadProgress& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return version_ > seen; })) return false;
  seen = version_;
  out = latest_;
  return true;
}

LoaderCore::LoaderCore(LoaderOptions options, LoadHooks hooks)
    : options_(std::move(options)),
      hooks_(std::move(hooks)),
      registry_([this](const std::string& model_id, const weights::PrecisionSpec& spec) {
        auto board = BoardFor(model_id);
        auto report = [this, board, model_id](const weights::LoadProgress& p) {
          board->Update(p);
          if (hooks_.on_progress) hooks_.on_progress(model_id, p);
        };
        // With a GPU, "done" waits until the data region is there too (publishing, again).
        weights::LoadProgress last;
        auto load = weights::DirectoryModelLoader(options_.model_roots, [&](const weights::LoadProgress& p) {
          last = p;
          if (!(options_.device.cuda && p.phase == weights::LoadPhase::kDone)) report(p);
          return true;
        });
        const auto start = std::chrono::steady_clock::now();
        auto loaded = load(model_id, spec);
        if (loaded.ok() && options_.device.cuda) {
          last.phase = weights::LoadPhase::kPublishing;
          last.current_tensor = "(data region to " + options_.device.ToString() + ")";
          report(last);
          if (Status s = PublishToDevice(options_.device, **loaded); !s.ok()) {
            (void)(*loaded)->segment.Unlink();
            loaded = s;
          } else {
            last.phase = weights::LoadPhase::kDone;
            last.current_tensor.clear();
            report(last);
          }
        }
        if (hooks_.on_done) {
          hooks_.on_done(model_id, loaded.ok() ? OkStatus() : loaded.status(),
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
        return loaded;
      }) {}

std::shared_ptr<LoadBoard> LoaderCore::BoardFor(const std::string& model_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& board = boards_[model_id];
  if (!board) board = std::make_shared<LoadBoard>();
  return board;
}

StatusOr<weights::PrecisionSpec> LoaderCore::ResolvePrecision(const std::string& precision) const {
  return weights::PrecisionSpec::Parse(precision.empty() ? options_.default_precision : precision);
}

StatusOr<weights::ModelInfo> LoaderCore::Load(const std::string& model_id, const std::string& precision,
                                              const std::function<bool(const weights::LoadProgress&)>& on_progress,
                                              LoadObserver observer) {
  if (model_id.empty()) return InvalidFieldError("model_id", "must not be empty");
  UNMASK_ASSIGN_OR_RETURN(weights::PrecisionSpec spec, ResolvePrecision(precision));
  auto board = BoardFor(model_id);
  // Subscribed before the load starts so that the observer sees it from its first update; gone
  // before this returns, so that it never outlives what it captures.
  struct Subscription {
    LoadBoard* board;
    std::uint64_t id;
    ~Subscription() {
      if (id != 0) board->Unsubscribe(id);
    }
  } subscription{board.get(), observer ? board->Subscribe(std::move(observer)) : 0};
  // The load runs (or is joined) on its own thread so that this one can stream progress; the
  // state is shared so that a caller that stops watching does not wait for the load.
  auto done = std::make_shared<std::promise<StatusOr<std::shared_ptr<const weights::LoadedModel>>>>();
  auto result = done->get_future();
  std::thread([this, done, model_id, spec] {
    done->set_value(registry_.GetOrLoad(model_id, spec));
  }).detach();
  std::uint64_t seen = 0;
  weights::LoadProgress progress;
  while (result.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
    if (board->WaitNewer(seen, progress, std::chrono::milliseconds(50)) && on_progress && !on_progress(progress))
      return CancelledError("stopped watching the load of '" + model_id + "'; the load goes on");
  }
  auto loaded = result.get();
  if (!loaded.ok()) return loaded.status();
  return registry_.Get(model_id);
}

weights::LeftoverScan LoaderCore::AdoptLeftoverSegments(bool adopt) {
  weights::LeftoverScanOptions scan_options;
  scan_options.shm_dir = options_.shm_dir;
  scan_options.name_prefix = options_.segment_prefix;
  scan_options.model_roots = options_.model_roots;
  scan_options.adopt = adopt;
  weights::LeftoverScan scan = weights::ScanLeftoverSegments(scan_options);
  std::vector<weights::AdoptedSegment> adopted;
  for (auto& a : scan.adopted) {
    const std::string model_id = a.model->manifest.model_id;
    const std::string name = a.model->segment.name();
    Status s = PublishToDevice(options_.device, *a.model);
    if (s.ok()) s = registry_.Adopt(model_id, a.precision, a.model);
    if (s.ok()) {
      adopted.push_back(std::move(a));
      continue;
    }
    (void)a.model->segment.Unlink();
    scan.removed.push_back({name, s.message()});
  }
  scan.adopted = std::move(adopted);
  return scan;
}

StatusOr<std::vector<std::string>> LoaderCore::Unload(const std::string& model_id, bool force) {
  UNMASK_ASSIGN_OR_RETURN(auto notified, registry_.Unload(model_id, force));
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& executor : notified) revoked_.insert({model_id, executor});
  }
  revoked_cv_.notify_all();
  return notified;
}

StatusOr<LoaderCore::Attachment> LoaderCore::Attach(const std::string& model_id, const std::string& executor_id) {
  if (model_id.empty()) return InvalidFieldError("model_id", "must not be empty");
  if (executor_id.empty()) return InvalidFieldError("executor_id", "must not be empty");
  UNMASK_RETURN_IF_ERROR(registry_.Attach(model_id, executor_id));
  {
    std::lock_guard<std::mutex> lock(mu_);
    revoked_.erase({model_id, executor_id});
  }
  auto info = registry_.Get(model_id);
  auto model = registry_.GetOrLoad(model_id, info.ok() ? info->precision : weights::PrecisionSpec{});
  if (!info.ok() || !model.ok()) {
    (void)registry_.Detach(model_id, executor_id);
    return info.ok() ? model.status() : info.status();
  }
  return Attachment{(*model)->segment.name(), (*model)->manifest.ToJson(), *info};
}

Status LoaderCore::Detach(const std::string& model_id, const std::string& executor_id) {
  return registry_.Detach(model_id, executor_id);
}

void LoaderCore::ReleaseRevoked(const std::string& model_id, const std::string& executor_id) {
  registry_.ReleaseRevoked(model_id, executor_id);
}

bool LoaderCore::WaitRevoked(const std::string& model_id, const std::string& executor_id,
                             const std::function<bool()>& stop) {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (revoked_.count({model_id, executor_id})) return true;
    if (stop()) return false;
    revoked_cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

}  // namespace unmask::loader
