// The HTTP server's threads, bounded: httplib's own pool queues every connection it cannot serve
// yet without limit, so under overload requests waited unseen, for minutes, before the scheduler
// could refuse them. Here a connection that finds all `threads` busy is served on a small
// overflow pool instead, where Overflowing() is true and the server answers 429 at once
// (OpenAiHttpServer's pre-routing handler) and closes the connection.
#pragma once

#include <httplib.h>

#include <atomic>
#include <cstddef>
#include <functional>

namespace unmask::scheduler::http {

class BoundedTaskQueue : public httplib::TaskQueue {
 public:
  BoundedTaskQueue(std::size_t threads, std::size_t overflow_threads = 2);
  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

  // True on an overflow thread while it serves a connection.
  static bool Overflowing();

 private:
  httplib::ThreadPool pool_, overflow_;
  const std::size_t threads_;
  std::atomic<std::size_t> busy_{0};
};

}  // namespace unmask::scheduler::http
