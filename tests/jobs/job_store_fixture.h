// The typed fixture that runs the same behaviour suite against MemoryJobStore and
// RedisJobStore. Time for deadlines and record timestamps comes from a manual clock, so that
// no test sleeps to let a deadline pass; what depends on Redis's own clock (key TTLs, idle
// times) is polled with a deadline.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/jobs/memory_job_store.h"
#include "common/jobs/redis_job_store.h"
#include "tests/jobs/shared_redis.h"

namespace unmask::jobs::testing {

// Starts at a fixed, realistic unix time; tests move it forward explicitly.
class ManualClock {
 public:
  std::int64_t Now() const { return now_.load(); }
  void Advance(std::int64_t ms) { now_ += ms; }
  UnixClock AsClock() {
    return [this] { return now_.load(); };
  }

 private:
  std::atomic<std::int64_t> now_{1'700'000'000'000};
};

// Polls `done` until it returns true or `timeout` passes.
inline bool PollUntil(const std::function<bool()>& done,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < give_up) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

struct MemoryBackend {
  static constexpr const char* kName = "Memory";
  void SetUp() {}
  std::unique_ptr<JobStore> Make(JobStoreOptions options) {
    return std::make_unique<MemoryJobStore>(std::move(options));
  }
  // In-process there are no replicas: a "second replica" is the same store.
  bool SharesOneInstance() const { return true; }
  // True once `n` callers wait inside the store, so that a test exercises the wake-up path.
  bool WaitUntilBlocked(JobStore& store, int n) {
    auto& memory = static_cast<MemoryJobStore&>(store);
    return PollUntil([&] { return memory.WaitingCallers() >= n; });
  }
};

struct RedisBackend {
  static constexpr const char* kName = "Redis";
  RedisServer* server = nullptr;
  void SetUp() {
    server = SharedRedisServer();
    ASSERT_NE(server, nullptr);
    RedisClient client(Endpoint(), 1);
    auto reply = client.Command({"FLUSHALL"});
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  }
  RedisEndpoint Endpoint() const {
    RedisEndpoint endpoint;
    endpoint.port = server->port();
    return endpoint;
  }
  std::unique_ptr<JobStore> Make(JobStoreOptions options) {
    RedisJobStoreOptions redis;
    redis.endpoint = Endpoint();
    redis.store = std::move(options);
    auto store = RedisJobStore::Connect(std::move(redis));
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    if (!store.ok()) return nullptr;
    return std::move(store).value();
  }
  bool SharesOneInstance() const { return false; }
  bool WaitUntilBlocked(JobStore&, int n) {
    RedisClient client(Endpoint(), 1);
    return PollUntil([&] {
      auto info = client.Command({"INFO", "clients"});
      if (!info.ok()) return false;
      const std::string text = ReplyString(info->get());
      const auto at = text.find("blocked_clients:");
      return at != std::string::npos && std::atoi(text.c_str() + at + 16) >= n;
    });
  }
};

template <typename Backend>
class JobStoreTest : public ::testing::Test {
 protected:
  static constexpr std::int64_t kTtlMs = 60'000;

  void SetUp() override {
    backend_.SetUp();
    if (::testing::Test::HasFatalFailure()) return;
    store_ = backend_.Make(Options(kTtlMs));
    ASSERT_NE(store_, nullptr);
    // Made here, not on first use: tests call replica() from several threads.
    if (!backend_.SharesOneInstance()) {
      replica_ = backend_.Make(Options(kTtlMs));
      ASSERT_NE(replica_, nullptr);
    }
  }

  JobStoreOptions Options(std::int64_t ttl_ms) {
    JobStoreOptions options;
    options.result_ttl_ms = ttl_ms;
    options.idempotency_ttl_ms = ttl_ms;
    options.clock = clock_.AsClock();
    return options;
  }

  JobStore& store() { return *store_; }
  // Another scheduler replica on the same backend (its own connections for Redis).
  JobStore& replica() { return replica_ ? *replica_ : *store_; }

  static JobRecord NewJob(const std::string& model = "llada-8b", int priority = 0) {
    JobRecord job;
    job.model = model;
    job.priority = priority;
    job.payload = std::string("req\0\x01\xff", 6);  // binary, like a serialized protobuf
    job.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    return job;
  }

  std::string MustSubmit(const JobRecord& job) {
    auto submitted = store_->Submit(job);
    EXPECT_TRUE(submitted.ok()) << submitted.status().ToString();
    return submitted.ok() ? submitted->job_id : std::string();
  }

  ClaimedJob MustClaim(const std::string& consumer = "consumer-a") {
    auto claimed = store_->Claim(consumer, 0);
    EXPECT_TRUE(claimed.ok()) << claimed.status().ToString();
    EXPECT_TRUE(claimed.ok() && claimed->has_value()) << "nothing to claim";
    if (!claimed.ok() || !claimed->has_value()) return {};
    return std::move(**claimed);
  }

  JobState StateOf(const std::string& job_id) {
    auto job = store_->Get(job_id);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? job->state : JobState::kDead;
  }

  Backend backend_;
  ManualClock clock_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<JobStore> replica_;
};

using StoreBackends = ::testing::Types<MemoryBackend, RedisBackend>;

struct BackendName {
  template <typename T>
  static std::string GetName(int) {
    return T::kName;
  }
};

}  // namespace unmask::jobs::testing
