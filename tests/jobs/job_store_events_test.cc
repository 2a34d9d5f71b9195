// Behaviour suite, part 3: per-job event logs (what Watch streams from any replica) and the
// result TTL. Runs against both stores.
#include <chrono>
#include <thread>

#include "tests/jobs/job_store_fixture.h"

namespace unmask::jobs::testing {
namespace {

template <typename Backend>
class JobEventsTest : public JobStoreTest<Backend> {
 protected:
  // Waits until a finished job's record is gone: moves the manual clock past the TTL (the
  // memory store's time) and polls (Redis expires keys on its own clock).
  bool WaitUntilRemoved(const std::string& job_id, std::int64_t ttl_ms) {
    this->clock_.Advance(ttl_ms + 1);
    return PollUntil(
        [&] { return this->store().Get(job_id).status().code() == StatusCode::kNotFound; });
  }
};
TYPED_TEST_SUITE(JobEventsTest, StoreBackends, BackendName);

TYPED_TEST(JobEventsTest, EventsAreReadBackInOrderFromAnyIndex) {
  const std::string id = this->MustSubmit(this->NewJob());
  for (int i = 0; i < 3; ++i) {
    auto index = this->store().AppendEvent(id, "event-" + std::to_string(i));
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    EXPECT_EQ(*index, i);
  }
  auto all = this->replica().ReadEvents(id, 0, 0);  // another replica reads them
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->events, (std::vector<std::string>{"event-0", "event-1", "event-2"}));
  EXPECT_EQ(all->next_index, 3);
  EXPECT_FALSE(all->finished);
  auto tail = this->store().ReadEvents(id, 2, 0);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->events, std::vector<std::string>{"event-2"});
  auto none = this->store().ReadEvents(id, 3, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->events.empty());
  EXPECT_EQ(none->next_index, 3);
}

TYPED_TEST(JobEventsTest, ReadTimesOutEmptyWhenNothingIsAppended) {
  const std::string id = this->MustSubmit(this->NewJob());
  auto batch = this->store().ReadEvents(id, 0, 50);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_TRUE(batch->events.empty());
  EXPECT_FALSE(batch->finished);
  EXPECT_EQ(this->store().ReadEvents("missing", 0, 0).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->store().AppendEvent("missing", "x").status().code(), StatusCode::kNotFound);
}

TYPED_TEST(JobEventsTest, BlockedReaderWakesOnAppend) {
  const std::string id = this->MustSubmit(this->NewJob());
  StatusOr<EventBatch> batch = EventBatch{};
  const auto start = std::chrono::steady_clock::now();
  std::thread reader([&] { batch = this->replica().ReadEvents(id, 0, 20'000); });
  EXPECT_TRUE(this->backend_.WaitUntilBlocked(this->replica(), 1));
  ASSERT_TRUE(this->store().AppendEvent(id, "step 1").ok());
  reader.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->events, std::vector<std::string>{"step 1"});
}

TYPED_TEST(JobEventsTest, AReaderFollowingARunningJobGetsEachNextEventAndWaitsWhenThereIsNone) {
  const std::string id = this->MustSubmit(this->NewJob());
  ClaimedJob claimed = this->MustClaim();
  for (const char* e : {"started", "step 1", "step 2"}) ASSERT_TRUE(this->store().AppendEvent(id, e).ok());
  auto next = this->replica().ReadEvents(id, 1, 20'000);  // there already: no wait
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->events, (std::vector<std::string>{"step 1", "step 2"}));
  EXPECT_EQ(next->next_index, 3);
  EXPECT_FALSE(next->finished);
  auto none = this->replica().ReadEvents(id, 3, 50);  // running, nothing new: empty, not finished
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->events.empty());
  EXPECT_EQ(none->next_index, 3);
  EXPECT_FALSE(none->finished);
  ASSERT_TRUE(this->store().Complete(id, claimed.handle, "result").ok());
  auto end = this->replica().ReadEvents(id, 3, 20'000);
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  EXPECT_TRUE(end->events.empty());
  EXPECT_TRUE(end->finished);
}

TYPED_TEST(JobEventsTest, FinishingAJobClosesItsLogAndWakesReaders) {
  const std::string id = this->MustSubmit(this->NewJob());
  ClaimedJob claimed = this->MustClaim();
  ASSERT_TRUE(this->store().AppendEvent(id, "started").ok());
  // A Watch that has seen everything so far waits for more; finishing must wake it.
  StatusOr<EventBatch> waiting = EventBatch{};
  const auto start = std::chrono::steady_clock::now();
  std::thread reader([&] { waiting = this->replica().ReadEvents(id, 1, 20'000); });
  EXPECT_TRUE(this->backend_.WaitUntilBlocked(this->replica(), 1));
  ASSERT_TRUE(this->store().Complete(id, claimed.handle, "result").ok());
  reader.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();
  EXPECT_TRUE(waiting->events.empty());
  EXPECT_TRUE(waiting->finished);

  auto replay = this->store().ReadEvents(id, 0, 0);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->events, std::vector<std::string>{"started"});
  EXPECT_TRUE(replay->finished);
  auto after = this->store().ReadEvents(id, replay->next_index, 1000);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->finished);
  EXPECT_TRUE(after->events.empty());
  EXPECT_EQ(this->store().AppendEvent(id, "too late").status().code(),
            StatusCode::kFailedPrecondition);
}

TYPED_TEST(JobEventsTest, FinishedJobsAreKeptForTheResultTtlThenRemoved) {
  // Long enough that "still there right after" holds on a loaded machine (Redis expires keys
  // on real time), short enough to wait for.
  constexpr std::int64_t kShortTtlMs = 1500;
  std::unique_ptr<JobStore> short_lived = this->backend_.Make(this->Options(kShortTtlMs));
  ASSERT_NE(short_lived, nullptr);
  this->store_ = std::move(short_lived);
  JobRecord job = this->NewJob();
  job.idempotency_key = "once";
  const std::string id = this->MustSubmit(job);
  ClaimedJob claimed = this->MustClaim();
  ASSERT_TRUE(this->store().Complete(id, claimed.handle, "result").ok());
  auto kept = this->store().Get(id);  // still there right after
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->result, "result");

  ASSERT_TRUE(this->WaitUntilRemoved(id, kShortTtlMs));
  EXPECT_EQ(this->store().ReadEvents(id, 0, 0).status().code(), StatusCode::kNotFound);
  // A reader that had followed it (past its first events, waiting for more) is told so too.
  EXPECT_EQ(this->store().ReadEvents(id, 1, 50).status().code(), StatusCode::kNotFound);
  // The idempotency key no longer points at a live job: a new submit makes a new job.
  auto again = this->store().Submit(job);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->duplicate);
  EXPECT_NE(again->job_id, id);
}

// Finish stores the outcome and ends the log with its event in one step, and only for the
// current delivery. The chaos test found a job whose log held two completed events: its first
// scheduler appended one, was killed before it stored the result, and the job ran again.
TYPED_TEST(JobEventsTest, FinishEndsTheLogWithItsEventOnlyWhenTheOutcomeIsStored) {
  const std::string id = this->MustSubmit(this->NewJob());
  ClaimedJob lost = this->MustClaim();
  ASSERT_TRUE(this->store().AppendEvent(id, "started-1").ok());
  auto reclaimed = this->replica().ReclaimStale("reaper", 0, 3);  // its scheduler died
  ASSERT_TRUE(reclaimed.ok()) << reclaimed.status().ToString();
  ASSERT_EQ(reclaimed->requeued, std::vector<std::string>{id});

  const Outcome late{JobState::kSucceeded, "result-1", OkStatus(), "completed-1"};
  EXPECT_EQ(this->store().Finish(id, lost.handle, late).code(), StatusCode::kFailedPrecondition);
  auto events = this->store().ReadEvents(id, 0, 0);
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  EXPECT_EQ(events->events, std::vector<std::string>{"started-1"});
  EXPECT_FALSE(events->finished);

  ClaimedJob again = this->MustClaim("consumer-b");
  ASSERT_TRUE(this->store().AppendEvent(id, "started-2").ok());
  const Outcome stored{JobState::kSucceeded, "result-2", OkStatus(), "completed-2"};
  ASSERT_TRUE(this->store().Finish(id, again.handle, stored).ok());
  EXPECT_EQ(this->store().Finish(id, again.handle, stored).code(), StatusCode::kFailedPrecondition);
  events = this->replica().ReadEvents(id, 0, 0);
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  EXPECT_EQ(events->events, (std::vector<std::string>{"started-1", "started-2", "completed-2"}));
  EXPECT_TRUE(events->finished);
  auto job = this->store().Get(id);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->state, JobState::kSucceeded);
  EXPECT_EQ(job->result, "result-2");
  EXPECT_EQ(job->attempts, 1);
}

TYPED_TEST(JobEventsTest, FinishTakesFailuresAndCancellationsButNoOtherState) {
  const std::string failed = this->MustSubmit(this->NewJob());
  const std::string cancelled = this->MustSubmit(this->NewJob());
  ClaimedJob first = this->MustClaim();
  ClaimedJob second = this->MustClaim();
  EXPECT_EQ(this->store().Finish(failed, first.handle, Outcome{JobState::kQueued, "", OkStatus(), ""}).code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(this->store().Finish(failed, first.handle, Outcome{JobState::kFailed, "", OkStatus(), "failed-event"}).ok());
  ASSERT_TRUE(this->store().Finish(cancelled, second.handle, Outcome{JobState::kCancelled, "", OkStatus(), ""}).ok());
  auto f = this->store().Get(failed);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->state, JobState::kFailed);
  EXPECT_EQ(f->error, "failed");
  EXPECT_EQ(f->error_code, std::nullopt);  // no Status given: read as INTERNAL, as before codes were kept
  EXPECT_EQ(ErrorOf(*f).code(), StatusCode::kInternal);
  EXPECT_EQ(ErrorOf(*f).detail(), nullptr);
  auto c = this->store().Get(cancelled);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->state, JobState::kCancelled);
  EXPECT_EQ(c->error, "cancelled while running");
  auto events = this->store().ReadEvents(failed, 0, 0);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->events, std::vector<std::string>{"failed-event"});
  EXPECT_TRUE(events->finished);
  events = this->store().ReadEvents(cancelled, 0, 0);
  ASSERT_TRUE(events.ok());
  EXPECT_TRUE(events->events.empty());
  EXPECT_TRUE(events->finished);
}

TYPED_TEST(JobEventsTest, QueuedAndRunningJobsNeverExpire) {
  constexpr std::int64_t kShortTtlMs = 50;
  this->store_ = this->backend_.Make(this->Options(kShortTtlMs));
  ASSERT_NE(this->store_, nullptr);
  const std::string queued = this->MustSubmit(this->NewJob());
  const std::string running = this->MustSubmit(this->NewJob());
  ASSERT_TRUE(this->store().Cancel(queued).ok());  // finished: may expire
  const std::string waiting = this->MustSubmit(this->NewJob());
  ClaimedJob claimed = this->MustClaim();
  ASSERT_EQ(claimed.record.job_id, running);
  ASSERT_TRUE(this->store().AppendEvent(running, "step").ok());
  ASSERT_TRUE(this->WaitUntilRemoved(queued, kShortTtlMs));
  EXPECT_EQ(this->StateOf(waiting), JobState::kQueued);
  EXPECT_EQ(this->StateOf(running), JobState::kRunning);
  auto events = this->store().ReadEvents(running, 0, 0);
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  EXPECT_EQ(events->events, std::vector<std::string>{"step"});
}

}  // namespace
}  // namespace unmask::jobs::testing
