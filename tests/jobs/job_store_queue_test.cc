// Behaviour suite, part 1: submit, idempotency, ordering, deadlines, cancel, depth and
// position, List. Runs against MemoryJobStore and RedisJobStore.
#include <chrono>
#include <thread>
#include <vector>

#include "tests/jobs/job_store_fixture.h"

namespace unmask::jobs::testing {
namespace {

template <typename Backend>
class JobQueueTest : public JobStoreTest<Backend> {};
TYPED_TEST_SUITE(JobQueueTest, StoreBackends, BackendName);

TYPED_TEST(JobQueueTest, SubmitThenGetReturnsTheStoredRecord) {
  JobRecord job = this->NewJob("llada-8b-instruct", 3);
  job.deadline_unix_ms = this->clock_.Now() + 60'000;
  job.idempotency_key = "client-42";
  auto submitted = this->store().Submit(job);
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  EXPECT_FALSE(submitted->duplicate);
  EXPECT_TRUE(IsValidJobId(submitted->job_id));

  auto got = this->store().Get(submitted->job_id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->job_id, submitted->job_id);
  EXPECT_EQ(got->model, "llada-8b-instruct");
  EXPECT_EQ(got->payload, job.payload);  // binary bytes intact
  EXPECT_EQ(got->priority, 3);
  EXPECT_EQ(got->deadline_unix_ms, job.deadline_unix_ms);
  EXPECT_EQ(got->idempotency_key, "client-42");
  EXPECT_EQ(got->traceparent, job.traceparent);
  EXPECT_EQ(got->state, JobState::kQueued);
  EXPECT_EQ(got->attempts, 0);
  EXPECT_EQ(got->created_unix_ms, this->clock_.Now());
  EXPECT_EQ(got->started_unix_ms, 0);
  EXPECT_FALSE(got->cancel_requested);
}

TYPED_TEST(JobQueueTest, ExplicitJobIdIsUsedAndCannotBeTakenTwice) {
  JobRecord job = this->NewJob();
  job.job_id = "my-job_1";
  auto first = this->store().Submit(job);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->job_id, "my-job_1");
  auto second = this->store().Submit(job);
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(*this->store().QueueDepth(), 1);
}

TYPED_TEST(JobQueueTest, RetriedSubmitWithSameIdempotencyKeyReturnsSameJob) {
  JobRecord job = this->NewJob();
  job.idempotency_key = "retry-me";
  auto first = this->store().Submit(job);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto again = this->replica().Submit(job);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->job_id, first->job_id);
  EXPECT_TRUE(again->duplicate);
  EXPECT_EQ(*this->store().QueueDepth(), 1);

  job.idempotency_key = "another-key";
  auto other = this->store().Submit(job);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->job_id, first->job_id);
  EXPECT_FALSE(other->duplicate);
}

TYPED_TEST(JobQueueTest, RejectsBadInputWithoutStoringAnything) {
  JobRecord no_model = this->NewJob("");
  EXPECT_EQ(this->store().Submit(no_model).status().code(), StatusCode::kInvalidArgument);
  for (int priority : {kMaxPriority + 1, kMinPriority - 1, 1000}) {
    auto status = this->store().Submit(this->NewJob("m", priority)).status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << priority;
    EXPECT_NE(status.message().find("priority"), std::string::npos) << status.message();
  }
  JobRecord past = this->NewJob();
  past.deadline_unix_ms = -5;
  EXPECT_EQ(this->store().Submit(past).status().code(), StatusCode::kInvalidArgument);
  JobRecord bad_id = this->NewJob();
  bad_id.job_id = "has:colon";
  EXPECT_EQ(this->store().Submit(bad_id).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*this->store().QueueDepth(), 0);
  EXPECT_EQ(this->store().Claim("c", 0).status().code(), StatusCode::kOk);
  EXPECT_EQ(this->store().Claim("", 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(this->store().List({std::nullopt, 0}).status().code(), StatusCode::kInvalidArgument);
}

TYPED_TEST(JobQueueTest, ClaimsHighestPriorityFirst) {
  const std::string low = this->MustSubmit(this->NewJob("m", 0));
  const std::string lowest = this->MustSubmit(this->NewJob("m", kMinPriority));
  const std::string high = this->MustSubmit(this->NewJob("m", 5));
  const std::string top = this->MustSubmit(this->NewJob("m", kMaxPriority));
  for (const std::string& expected : {top, high, low, lowest}) {
    ClaimedJob claimed = this->MustClaim();
    EXPECT_EQ(claimed.record.job_id, expected);
    EXPECT_EQ(claimed.record.state, JobState::kRunning);
  }
  auto none = this->store().Claim("consumer-a", 0);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TYPED_TEST(JobQueueTest, ClaimsInSubmitOrderWithinAPriority) {
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(this->MustSubmit(this->NewJob("m", 2)));
  for (const std::string& expected : ids) EXPECT_EQ(this->MustClaim().record.job_id, expected);
}

TYPED_TEST(JobQueueTest, ExpiredJobsAreSkippedAndMarked) {
  JobRecord soon = this->NewJob("m", 9);
  soon.deadline_unix_ms = this->clock_.Now() + 1000;
  const std::string expiring = this->MustSubmit(soon);
  const std::string normal = this->MustSubmit(this->NewJob("m", 0));
  this->clock_.Advance(1500);

  EXPECT_EQ(this->MustClaim().record.job_id, normal);
  auto expired = this->store().Get(expiring);
  ASSERT_TRUE(expired.ok());
  EXPECT_EQ(expired->state, JobState::kExpired);
  EXPECT_NE(expired->error.find("deadline"), std::string::npos);
  EXPECT_EQ(expired->finished_unix_ms, this->clock_.Now());
  EXPECT_EQ(*this->store().QueueDepth(), 0);
  auto events = this->store().ReadEvents(expiring, 0, 0);
  ASSERT_TRUE(events.ok());
  EXPECT_TRUE(events->finished);
}

TYPED_TEST(JobQueueTest, ClaimOnEmptyQueueReturnsNothingAfterWaiting) {
  auto immediate = this->store().Claim("c", 0);
  ASSERT_TRUE(immediate.ok()) << immediate.status().ToString();
  EXPECT_FALSE(immediate->has_value());
  auto waited = this->store().Claim("c", 50);
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  EXPECT_FALSE(waited->has_value());
}

TYPED_TEST(JobQueueTest, BlockedClaimWakesWhenAJobIsSubmitted) {
  StatusOr<std::optional<ClaimedJob>> claimed = std::optional<ClaimedJob>();
  const auto start = std::chrono::steady_clock::now();
  std::thread waiter([&] { claimed = this->replica().Claim("waiter", 20'000); });
  EXPECT_TRUE(this->backend_.WaitUntilBlocked(this->replica(), 1));
  const std::string id = this->MustSubmit(this->NewJob());
  waiter.join();
  // Woken by the submit, not by the end of its 20 s wait.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
  ASSERT_TRUE(claimed->has_value());
  EXPECT_EQ((*claimed)->record.job_id, id);
  EXPECT_EQ((*claimed)->handle.consumer, "waiter");
}

TYPED_TEST(JobQueueTest, QueueDepthAndPositionFollowClaimOrder) {
  const std::string a = this->MustSubmit(this->NewJob("m", 0));
  const std::string b = this->MustSubmit(this->NewJob("m", 0));
  const std::string urgent = this->MustSubmit(this->NewJob("m", 7));
  EXPECT_EQ(*this->store().QueueDepth(), 3);
  EXPECT_EQ(*this->store().Position(urgent), 0);
  EXPECT_EQ(*this->store().Position(a), 1);
  EXPECT_EQ(*this->store().Position(b), 2);

  EXPECT_EQ(this->MustClaim().record.job_id, urgent);
  EXPECT_EQ(*this->store().QueueDepth(), 2);
  EXPECT_EQ(*this->store().Position(a), 0);
  EXPECT_EQ(*this->store().Position(b), 1);
  EXPECT_EQ(this->store().Position(urgent).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->store().Position("nope").status().code(), StatusCode::kNotFound);
}

TYPED_TEST(JobQueueTest, CancellingAQueuedJobTakesEffectAtOnce) {
  const std::string doomed = this->MustSubmit(this->NewJob("m", 5));
  const std::string kept = this->MustSubmit(this->NewJob("m", 0));
  auto state = this->store().Cancel(doomed);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(*state, JobState::kCancelled);
  EXPECT_EQ(this->StateOf(doomed), JobState::kCancelled);
  EXPECT_EQ(*this->store().QueueDepth(), 1);
  EXPECT_EQ(this->MustClaim().record.job_id, kept);
  auto none = this->store().Claim("c", 0);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(*this->store().Cancel(doomed), JobState::kCancelled);  // unchanged
  EXPECT_EQ(this->store().Cancel("missing").status().code(), StatusCode::kNotFound);
}

TYPED_TEST(JobQueueTest, CancellingARunningJobRequestsItAndTheDispatcherConfirms) {
  const std::string id = this->MustSubmit(this->NewJob());
  ClaimedJob claimed = this->MustClaim();
  EXPECT_FALSE(*this->store().CancelRequested(id));
  EXPECT_EQ(*this->replica().Cancel(id), JobState::kRunning);
  EXPECT_TRUE(*this->store().CancelRequested(id));
  EXPECT_EQ(this->StateOf(id), JobState::kRunning);
  ASSERT_TRUE(this->store().ConfirmCancelled(id, claimed.handle).ok());
  EXPECT_EQ(this->StateOf(id), JobState::kCancelled);
  EXPECT_EQ(this->store().CancelRequested("missing").status().code(), StatusCode::kNotFound);
}

TYPED_TEST(JobQueueTest, ListFiltersByStateNewestFirst) {
  const std::string first = this->MustSubmit(this->NewJob());
  this->clock_.Advance(10);
  const std::string second = this->MustSubmit(this->NewJob());
  this->clock_.Advance(10);
  const std::string third = this->MustSubmit(this->NewJob());
  this->clock_.Advance(10);
  ClaimedJob claimed = this->MustClaim();  // first
  ASSERT_TRUE(this->store().Complete(first, claimed.handle, "done").ok());

  auto queued = this->store().List({JobState::kQueued, 10});
  ASSERT_TRUE(queued.ok()) << queued.status().ToString();
  ASSERT_EQ(queued->size(), 2u);
  EXPECT_EQ((*queued)[0].job_id, third);
  EXPECT_EQ((*queued)[1].job_id, second);
  auto done = this->store().List({JobState::kSucceeded, 10});
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->size(), 1u);
  EXPECT_EQ((*done)[0].job_id, first);
  EXPECT_EQ((*done)[0].result, "done");
  auto all = this->store().List({std::nullopt, 2});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].job_id, first);  // changed last
  EXPECT_EQ((*all)[1].job_id, third);
  EXPECT_TRUE(this->store().List({JobState::kDead, 5})->empty());
}

}  // namespace
}  // namespace unmask::jobs::testing
