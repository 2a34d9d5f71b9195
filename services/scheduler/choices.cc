#include "services/scheduler/choices.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "services/scheduler/scheduler_core.h"

namespace unmask::scheduler {
namespace {

// How often the caller's thread asks stop() while no event comes (Watch asks about as often:
// once per job-store read of up to 250 ms).
constexpr auto kStopPoll = std::chrono::milliseconds(100);

// The events of the choices' watcher threads, handed to the caller's thread in arrival order.
class EventQueue {
 public:
  explicit EventQueue(int watchers) : running_(watchers) {}

  void Push(v1::JobEvent event) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(std::move(event));
    }
    cv_.notify_one();
  }
  void WatcherEnded() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
    }
    cv_.notify_one();
  }
  // The next event, or none after `wait` without one; `*ended`: every watcher ended and every
  // event was taken.
  std::optional<v1::JobEvent> Pop(std::chrono::milliseconds wait, bool* ended) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, wait, [this] { return !events_.empty() || running_ == 0; });
    *ended = events_.empty() && running_ == 0;
    if (events_.empty()) return std::nullopt;
    v1::JobEvent event = std::move(events_.front());
    events_.pop_front();
    return event;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::JobEvent> events_;
  int running_;
};

// Watches choice `index`'s job until it ends or `halt` is set, stamping each event.
void WatchChoice(SchedulerCore& core, const std::vector<std::string>& job_ids, int index, bool duplicate,
                 const std::atomic<bool>& halt, EventQueue& queue) {
  const std::string& job_id = job_ids[static_cast<std::size_t>(index)];
  const Status watched = core.Watch(
      job_id,
      [&](const v1::JobEvent& event) {
        v1::JobEvent stamped = event;
        stamped.set_index(index);
        if (stamped.has_accepted()) {
          for (const auto& id : job_ids) stamped.mutable_accepted()->add_job_ids(id);
        }
        queue.Push(std::move(stamped));
        return !halt.load();
      },
      [&] { return halt.load(); }, duplicate);
  if (!watched.ok() && !halt.load()) {
    v1::JobEvent failed;
    failed.set_job_id(job_id);
    failed.set_index(index);
    *failed.mutable_failed() = FailedOf(watched.WithContext("watching choice " + std::to_string(index)));
    queue.Push(std::move(failed));
  }
  queue.WatcherEnded();
}

}  // namespace

v1::StoredJob ChoiceJob(const v1::StoredJob& first, int index) {
  v1::StoredJob job = first;
  const std::uint64_t seed = first.run().params().seed() + static_cast<std::uint64_t>(index);
  job.mutable_run()->mutable_params()->set_seed(seed);
  job.mutable_accepted()->mutable_params()->set_seed(seed);
  return job;
}

std::string ChoiceIdempotencyKey(const std::string& key, int index) {
  if (key.empty() || index == 0) return key;
  return key + " choice " + std::to_string(index);
}

std::vector<std::string> ChoiceJobIds(const v1::SubmitResponse& submitted) {
  const auto& ids = submitted.accepted().job_ids();
  if (ids.empty()) return {submitted.job_id()};
  return {ids.begin(), ids.end()};
}

Status WatchChoices(SchedulerCore& core, const v1::SubmitResponse& submitted,
                    const std::function<bool(const v1::JobEvent&)>& emit, const std::function<bool()>& stop) {
  const std::vector<std::string> job_ids = ChoiceJobIds(submitted);
  const bool duplicate = submitted.accepted().duplicate();
  if (job_ids.size() == 1) return core.Watch(job_ids[0], emit, stop, duplicate);

  const int n = static_cast<int>(job_ids.size());
  EventQueue queue(n);
  std::atomic<bool> halt{false};
  std::vector<std::thread> watchers;
  watchers.reserve(job_ids.size());
  for (int i = 0; i < n; ++i) {
    watchers.emplace_back([&, i] { WatchChoice(core, job_ids, i, duplicate, halt, queue); });
  }
  Status result = OkStatus();
  for (bool ended = false; !ended;) {
    std::optional<v1::JobEvent> event = queue.Pop(kStopPoll, &ended);
    if (event && !emit(*event)) break;
    if (!ended && stop()) {
      result = CancelledError("watch ended by the client");
      break;
    }
  }
  halt = true;
  for (auto& w : watchers) w.join();
  return result;
}

}  // namespace unmask::scheduler
