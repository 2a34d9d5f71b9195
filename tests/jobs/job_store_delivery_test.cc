// Behaviour suite, part 2: the delivery lifecycle (complete, fail, requeue, the reaper,
// heartbeats, stale handles) and concurrent claims. Runs against both stores.
#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "tests/jobs/job_store_fixture.h"

namespace unmask::jobs::testing {
namespace {

template <typename Backend>
class JobDeliveryTest : public JobStoreTest<Backend> {};
TYPED_TEST_SUITE(JobDeliveryTest, StoreBackends, BackendName);

TYPED_TEST(JobDeliveryTest, CompleteStoresTheResultAndAcknowledges) {
  const std::string id = this->MustSubmit(this->NewJob());
  ClaimedJob claimed = this->MustClaim();
  this->clock_.Advance(5);
  ASSERT_TRUE(this->store().MarkRunning(claimed.handle, "executor-0").ok());
  this->clock_.Advance(100);
  const std::string result("out\0put", 7);
  ASSERT_TRUE(this->store().Complete(id, claimed.handle, result).ok());

  auto job = this->store().Get(id);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->state, JobState::kSucceeded);
  EXPECT_EQ(job->result, result);
  EXPECT_EQ(job->executor, "executor-0");
  EXPECT_EQ(job->started_unix_ms, this->clock_.Now() - 100);
  EXPECT_EQ(job->finished_unix_ms, this->clock_.Now());
  EXPECT_EQ(job->attempts, 0);

  // Acknowledged: the reaper finds nothing, a second outcome is refused.
  auto reclaimed = this->store().ReclaimStale("reaper", 0, 3);
  ASSERT_TRUE(reclaimed.ok()) << reclaimed.status().ToString();
  EXPECT_TRUE(reclaimed->requeued.empty());
  EXPECT_TRUE(reclaimed->dead.empty());
  EXPECT_EQ(this->store().Complete(id, claimed.handle, "again").code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->store().Fail(id, claimed.handle, InternalError("late")).code(), StatusCode::kFailedPrecondition);
}

TYPED_TEST(JobDeliveryTest, FailStoresTheErrorWithItsCodeFieldReasonAndMetadata) {
  const std::string id = this->MustSubmit(this->NewJob());
  ClaimedJob claimed = this->MustClaim();
  const Status error = ResourceExhaustedError("params.gen_length: does not fit in memory")
                           .WithField("params.gen_length")
                           .WithReason("DOES_NOT_FIT", {{"limit", "64"}, {"asked", "4096"}});
  ASSERT_TRUE(this->store().Fail(id, claimed.handle, error).ok());
  auto job = this->store().Get(id);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_EQ(job->error, "params.gen_length: does not fit in memory");
  EXPECT_EQ(job->error_code, StatusCode::kResourceExhausted);
  EXPECT_EQ(job->error_detail.field, "params.gen_length");
  EXPECT_EQ(job->error_detail.reason, "DOES_NOT_FIT");
  EXPECT_EQ(job->error_detail.metadata, (std::map<std::string, std::string>{{"asked", "4096"}, {"limit", "64"}}));
  EXPECT_TRUE(job->result.empty());
  const Status back = ErrorOf(*job);
  EXPECT_EQ(back.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(back.message(), error.message());
  EXPECT_EQ(back.field(), "params.gen_length");
  EXPECT_EQ(back.reason(), "DOES_NOT_FIT");
}

TYPED_TEST(JobDeliveryTest, FailWithoutDetailStoresTheCodeAlone) {
  const std::string id = this->MustSubmit(this->NewJob());
  ClaimedJob claimed = this->MustClaim();
  ASSERT_TRUE(this->store().Fail(id, claimed.handle, DataLossError("the stored request cannot be read")).ok());
  auto job = this->store().Get(id);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->error_code, StatusCode::kDataLoss);
  EXPECT_EQ(ErrorOf(*job).code(), StatusCode::kDataLoss);
  EXPECT_EQ(ErrorOf(*job).detail(), nullptr);
}

TYPED_TEST(JobDeliveryTest, AHandleOnlyFinishesItsOwnJob) {
  const std::string a = this->MustSubmit(this->NewJob());
  const std::string b = this->MustSubmit(this->NewJob());
  ClaimedJob first = this->MustClaim();
  ASSERT_EQ(first.record.job_id, a);
  EXPECT_EQ(this->store().Complete(b, first.handle, "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(this->store().Complete(a, DeliveryHandle{}, "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(this->StateOf(b), JobState::kQueued);
}

TYPED_TEST(JobDeliveryTest, RequeueCountsAnAttemptAndFencesTheOldHandle) {
  const std::string id = this->MustSubmit(this->NewJob());
  const std::string later = this->MustSubmit(this->NewJob());
  ClaimedJob first = this->MustClaim();
  ASSERT_EQ(first.record.job_id, id);
  auto state = this->store().Requeue(first.handle);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(*state, JobState::kQueued);
  auto job = this->store().Get(id);
  EXPECT_EQ(job->attempts, 1);
  EXPECT_EQ(job->state, JobState::kQueued);
  EXPECT_TRUE(job->executor.empty());
  // Requeued behind the jobs already queued at its priority.
  EXPECT_EQ(*this->store().Position(id), 1);
  EXPECT_EQ(this->MustClaim().record.job_id, later);
  ClaimedJob second = this->MustClaim();
  EXPECT_EQ(second.record.job_id, id);
  EXPECT_NE(second.handle.delivery_id, first.handle.delivery_id);
  EXPECT_EQ(this->store().Complete(id, first.handle, "stale").code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->store().Heartbeat(first.handle).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(this->store().Complete(id, second.handle, "fresh").ok());
  EXPECT_EQ(this->store().Get(id)->result, "fresh");
}

TYPED_TEST(JobDeliveryTest, RequeueOfAJobWithACancelRequestCancelsIt) {
  const std::string id = this->MustSubmit(this->NewJob());
  ClaimedJob claimed = this->MustClaim();
  ASSERT_EQ(*this->store().Cancel(id), JobState::kRunning);
  EXPECT_EQ(*this->store().Requeue(claimed.handle), JobState::kCancelled);
  EXPECT_EQ(this->StateOf(id), JobState::kCancelled);
  EXPECT_EQ(*this->store().QueueDepth(), 0);
}

TYPED_TEST(JobDeliveryTest, ReaperRequeuesDeadConsumersJobsThenDeadLettersThem) {
  const std::string id = this->MustSubmit(this->NewJob());
  constexpr int kMaxAttempts = 3;
  for (int attempt = 1; attempt <= kMaxAttempts; ++attempt) {
    ClaimedJob claimed = this->MustClaim("consumer-that-dies");
    ASSERT_EQ(claimed.record.job_id, id);
    // Fresh deliveries are left alone.
    auto untouched = this->replica().ReclaimStale("reaper", 3'600'000, kMaxAttempts);
    ASSERT_TRUE(untouched.ok()) << untouched.status().ToString();
    EXPECT_TRUE(untouched->requeued.empty() && untouched->dead.empty());

    auto reclaimed = this->replica().ReclaimStale("reaper", 0, kMaxAttempts);
    ASSERT_TRUE(reclaimed.ok()) << reclaimed.status().ToString();
    auto job = this->store().Get(id);
    ASSERT_TRUE(job.ok());
    EXPECT_EQ(job->attempts, attempt);
    if (attempt < kMaxAttempts) {
      EXPECT_EQ(reclaimed->requeued, std::vector<std::string>{id});
      EXPECT_EQ(job->state, JobState::kQueued);
    } else {
      EXPECT_EQ(reclaimed->dead, std::vector<std::string>{id});
      EXPECT_EQ(job->state, JobState::kDead);
      EXPECT_NE(job->error.find("max_attempts 3"), std::string::npos) << job->error;
    }
    EXPECT_EQ(this->store().Complete(id, claimed.handle, "late").code(),
              StatusCode::kFailedPrecondition);
  }
  auto none = this->store().Claim("c", 0);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(this->store().ReclaimStale("reaper", 0, 0).status().code(),
            StatusCode::kInvalidArgument);
}

TYPED_TEST(JobDeliveryTest, ReaperTakesOverOnlyDeliveriesIdleLongEnough) {
  const std::string beating = this->MustSubmit(this->NewJob());
  const std::string silent = this->MustSubmit(this->NewJob());
  ClaimedJob alive = this->MustClaim("alive");
  ClaimedJob dead = this->MustClaim("dead");
  ASSERT_EQ(alive.record.job_id, beating);
  ASSERT_EQ(dead.record.job_id, silent);
  // The memory store measures idle time on the manual clock, Redis on its own: move both.
  // Far above the heartbeat interval (a few ms), so that a loaded machine does not make the
  // live delivery look idle.
  constexpr std::int64_t kMinIdleMs = 1000;
  ReclaimReport seen;
  const bool reclaimed = PollUntil([&] {
    EXPECT_TRUE(this->store().Heartbeat(alive.handle).ok());
    this->clock_.Advance(25);
    auto report = this->replica().ReclaimStale("reaper", kMinIdleMs, 5);
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    if (report.ok()) {
      for (auto& id : report->requeued) seen.requeued.push_back(id);
    }
    return !seen.requeued.empty();
  });
  ASSERT_TRUE(reclaimed);
  EXPECT_EQ(seen.requeued, std::vector<std::string>{silent});
  EXPECT_EQ(this->StateOf(beating), JobState::kRunning);
  EXPECT_TRUE(this->store().Complete(beating, alive.handle, "ok").ok());
}

TYPED_TEST(JobDeliveryTest, ConcurrentConsumersNeverGetTheSameJob) {
  constexpr int kJobs = 120;
  constexpr int kConsumers = 4;
  std::set<std::string> submitted;
  for (int i = 0; i < kJobs; ++i) submitted.insert(this->MustSubmit(this->NewJob("m", i % 3)));
  // Two replicas (Redis) with two consumers each.
  JobStore& replica = this->replica();
  std::mutex mu;
  std::vector<std::string> claimed;
  std::vector<std::thread> threads;
  for (int c = 0; c < kConsumers; ++c) {
    JobStore& store = c % 2 == 0 ? this->store() : replica;
    threads.emplace_back([&, c, &store = store] {
      const std::string consumer = "consumer-" + std::to_string(c);
      for (;;) {
        auto next = store.Claim(consumer, 0);
        ASSERT_TRUE(next.ok()) << next.status().ToString();
        if (!next->has_value()) return;
        const ClaimedJob& job = **next;
        ASSERT_TRUE(store.Complete(job.record.job_id, job.handle, consumer).ok());
        std::lock_guard<std::mutex> lock(mu);
        claimed.push_back(job.record.job_id);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> unique(claimed.begin(), claimed.end());
  EXPECT_EQ(claimed.size(), unique.size()) << "a job was delivered twice";
  EXPECT_EQ(unique, submitted);
  EXPECT_EQ(*this->store().QueueDepth(), 0);
}

}  // namespace
}  // namespace unmask::jobs::testing
