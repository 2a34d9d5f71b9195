#include "services/executor/lease_keeper.h"

#include "common/telemetry/log.h"

namespace unmask::executor {

using telemetry::Log;
using telemetry::LogLevel;

LeaseKeeper::LeaseKeeper(AttachOptions options, std::unique_ptr<LoaderLease> lease, ExecutorCore& core,
                         LeaseKeeperHooks hooks, const telemetry::Tracer& tracer, std::chrono::milliseconds poll)
    : options_(std::move(options)),
      lease_(std::move(lease)),
      core_(core),
      hooks_(std::move(hooks)),
      tracer_(tracer),
      poll_(poll) {
  thread_ = std::thread([this] { Loop(); });
}

LeaseKeeper::~LeaseKeeper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool LeaseKeeper::Sleep(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, d, [&] { return stop_; });
}

void LeaseKeeper::Loop() {
  while (Sleep(poll_)) {
    if (!lease_) {
      AttachAgain();
    } else if (lease_->revoked()) {
      Release();
    } else if (lease_->lost() && lease_->device_sharing() == "cuda-ipc") {
      DropDeadDeviceCopy();
    } else if (lease_->lost()) {
      Reattach();
    }
  }
}

void LeaseKeeper::Install(std::unique_ptr<LoaderLease> next) {
  if (hooks_.attached) hooks_.attached(*next);
  if (next->same_weights()) {
    Log(LogLevel::kInfo, {}, {}, "re-attached to the same weights; model kept",
        {{"model_id", options_.model_id}, {"segment", next->model()->segment().name()}});
  } else {
    auto built = hooks_.build(next->model());
    if (!built.ok()) {
      Log(LogLevel::kError, {}, {}, "cannot build the model over the new segment",
          {{"model_id", options_.model_id}, {"error", built.status().ToString()}});
      return;  // `next` is dropped: its lease closes, and the loop tries again
    }
    // The replaced model stays alive as long as the batches running on it.
    core_.ReplaceModel(*std::move(built), next->precision());
    Log(LogLevel::kInfo, {}, {}, "attached",
        {{"model_id", options_.model_id}, {"segment", next->model()->segment().name()},
         {"precision", next->precision()}});
  }
  lease_ = std::move(next);
  if (hooks_.set_serving) hooks_.set_serving(true);
}

void LeaseKeeper::Reattach() {
  Log(LogLevel::kWarn, {}, {}, "the loader went away; re-attaching", {{"model_id", options_.model_id}});
  AttachOptions again = options_;
  again.load = true;
  auto next = LoaderLease::Acquire(again, tracer_, lease_->model());
  if (!next.ok()) {
    Log(LogLevel::kError, {}, {}, "re-attach failed", {{"model_id", options_.model_id}, {"error", next.status().ToString()}});
    return;  // still serving the weights already mapped; tried again on the next poll
  }
  Install(*std::move(next));
}

void LeaseKeeper::DropDeadDeviceCopy() {
  if (hooks_.set_serving) hooks_.set_serving(false);
  core_.ReplaceModel(nullptr, "");
  lease_.reset();
  load_again_ = true;  // the model is gone with the loader, not unloaded by anybody: load it again
  Log(LogLevel::kWarn, {}, {}, "the loader went away and its GPU copy of the weights with it; not serving until re-attached",
      {{"model_id", options_.model_id}});
}

void LeaseKeeper::Release() {
  load_again_ = false;
  if (hooks_.set_serving) hooks_.set_serving(false);
  std::weak_ptr<const model::LladaModel> old = core_.ReplaceModel(nullptr, "");
  Log(LogLevel::kWarn, {}, {}, "the loader unloaded the model (forced); not serving until it is loaded again",
      {{"model_id", options_.model_id}});
  while (!old.expired()) {
    if (!Sleep(std::chrono::milliseconds(20))) return;  // shutting down: the lease closes with the keeper
  }
  lease_.reset();  // the last use of the weights is gone: the loader may free them now
  Log(LogLevel::kInfo, {}, {}, "let go of the unloaded weights", {{"model_id", options_.model_id}});
}

void LeaseKeeper::AttachAgain() {
  AttachOptions again = options_;
  again.load = load_again_;  // after a forced unload, somebody's decision: do not undo it
  again.timeout = std::chrono::seconds(0);
  std::string waiting_on;
  while (true) {
    auto next = LoaderLease::Acquire(again, tracer_);
    if (next.ok()) {
      Install(*std::move(next));
      return;
    }
    if (next.status().ToString() != waiting_on) {
      waiting_on = next.status().ToString();
      Log(LogLevel::kInfo, {}, {}, load_again_ ? "waiting for the loader" : "waiting for the model to be loaded again",
          {{"model_id", options_.model_id}, {"loader", options_.loader_address}, {"last_answer", waiting_on}});
    }
    if (!Sleep(poll_ * 5)) return;
  }
}

}  // namespace unmask::executor
