#include "services/executor/job.h"

namespace unmask::executor {

bool Job::Next(JobEvent& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
  out = std::move(events_.front());
  events_.pop_front();
  return true;
}

void Job::Cancel(Status why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_.exchange(true)) return;
  cancel_reason_ = std::move(why);
}

Status Job::cancel_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancel_reason_;
}

void Job::Push(JobEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (event.kind != JobEvent::Kind::kStep) finished_ = true;
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

}  // namespace unmask::executor
