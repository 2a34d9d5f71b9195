#include "services/scheduler/http/bounded_task_queue.h"

#include <utility>

namespace unmask::scheduler::http {
namespace {
thread_local bool overflowing = false;
}  // namespace

BoundedTaskQueue::BoundedTaskQueue(std::size_t threads, std::size_t overflow_threads)
    : pool_(threads), overflow_(overflow_threads), threads_(threads) {}

void BoundedTaskQueue::enqueue(std::function<void()> fn) {
  if (busy_.fetch_add(1) < threads_) {
    pool_.enqueue([this, fn = std::move(fn)] {
      fn();
      busy_.fetch_sub(1);
    });
    return;
  }
  busy_.fetch_sub(1);
  overflow_.enqueue([fn = std::move(fn)] {
    overflowing = true;
    fn();
    overflowing = false;
  });
}

void BoundedTaskQueue::shutdown() {
  pool_.shutdown();
  overflow_.shutdown();
}

bool BoundedTaskQueue::Overflowing() { return overflowing; }

}  // namespace unmask::scheduler::http
