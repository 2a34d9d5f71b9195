// n > 1 (several samples of one prompt) through the scheduler's gRPC adapter on a real server
// (port 0) over the in-process job store, with no executor: the n jobs as stored (alike but for
// the seed, each with its own idempotency key), all or none under the queue's and the client's
// limits, a bad n named, and Generate's stream of every choice with its index, where a choice
// that ends (here: cancelled) ends alone.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <map>

#include "common/jobs/memory_job_store.h"
#include "services/common/grpc_status.h"
#include "services/common/server_runner.h"
#include "services/scheduler/choices.h"
#include "services/scheduler/clamp_adapter.h"
#include "services/scheduler/request_validation.h"
#include "services/scheduler/scheduler_core.h"
#include "services/scheduler/scheduler_grpc.h"

namespace unmask::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::GenerateRequest Sampled(int n, std::uint64_t seed = 7) {
  v1::GenerateRequest r;
  r.set_model("tiny-llada");
  for (int id : {11, 12, 13}) r.mutable_ids()->add_ids(id);
  auto* p = r.mutable_params();
  p->set_gen_length(8);
  p->set_temperature(0.8);
  p->set_seed(seed);
  r.set_n(n);
  return r;
}

// A scheduler core and its gRPC service on port 0, over a memory job store, no executors.
struct ServedScheduler {
  explicit ServedScheduler(SchedulerOptions options)
      : catalog({std::string(UNMASK_TEST_DATA_DIR)}),
        core(store, [] { return std::vector<ExecutorSnapshot>{}; }, catalog,
             MakeClamper(fitting::ClampPolicy::kOff, 2), std::move(options)),
        service(core) {
    runner.AddService(&service);
    EXPECT_TRUE(runner.Start("127.0.0.1:0").ok());
    runner.SetServing(true);
    stub = v1::Scheduler::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(runner.port()), grpc::InsecureChannelCredentials()));
  }
  ~ServedScheduler() { runner.Drain(std::chrono::seconds(1)); }

  grpc::Status Submit(const v1::GenerateRequest& r, v1::SubmitResponse* resp) {
    grpc::ClientContext ctx;
    return stub->Submit(&ctx, r, resp);
  }
  v1::StoredJob Stored(const std::string& job_id) {
    v1::StoredJob job;
    auto record = store.Get(job_id);
    EXPECT_TRUE(record.ok()) << record.status().ToString();
    if (record.ok()) {
      EXPECT_TRUE(job.ParseFromString(record->payload));
    }
    return job;
  }
  std::int64_t Depth() { return *store.QueueDepth(); }

  jobs::MemoryJobStore store;
  ModelCatalog catalog;
  SchedulerCore core;
  SchedulerGrpcService service;
  services::ServerRunner runner{"Scheduler"};
  std::unique_ptr<v1::Scheduler::Stub> stub;
};

TEST(SchedulerChoicesTest, NChoicesAreNJobsAlikeButForTheSeed) {
  ServedScheduler s(SchedulerOptions{});
  v1::GenerateRequest request = Sampled(3);
  request.set_idempotency_key("retry-me");
  v1::SubmitResponse resp;
  ASSERT_TRUE(s.Submit(request, &resp).ok());
  const auto& ids = resp.accepted().job_ids();
  ASSERT_EQ(ids.size(), 3);
  EXPECT_EQ(ids[0], resp.job_id());
  EXPECT_EQ(resp.accepted().params().seed(), 7u);
  EXPECT_EQ(s.Depth(), 3);

  const v1::StoredJob first = s.Stored(ids[0]);
  for (int i = 0; i < 3; ++i) {
    v1::StoredJob job = s.Stored(ids[i]);
    EXPECT_EQ(job.run().params().seed(), 7u + i);
    EXPECT_EQ(job.accepted().params().seed(), 7u + i);
    EXPECT_EQ(s.store.Get(ids[i])->idempotency_key, ChoiceIdempotencyKey("retry-me", i));
    job.mutable_run()->mutable_params()->set_seed(7);
    job.mutable_accepted()->mutable_params()->set_seed(7);
    EXPECT_EQ(job.SerializeAsString(), first.SerializeAsString()) << "choice " << i;
  }
  EXPECT_EQ(ChoiceIdempotencyKey("retry-me", 0), "retry-me");
  EXPECT_EQ(ChoiceIdempotencyKey("retry-me", 2), "retry-me choice 2");
  EXPECT_EQ(ChoiceIdempotencyKey("", 2), "");

  // The same request again finds the same jobs.
  v1::SubmitResponse again;
  ASSERT_TRUE(s.Submit(request, &again).ok());
  EXPECT_TRUE(again.accepted().duplicate());
  EXPECT_EQ(again.job_id(), resp.job_id());
  EXPECT_THAT(again.accepted().job_ids(), ElementsAre(ids[0], ids[1], ids[2]));
  EXPECT_EQ(s.Depth(), 3);

  // n = 1 (and 0) is one job with no list, as before n existed.
  for (int n : {0, 1}) {
    v1::SubmitResponse one;
    ASSERT_TRUE(s.Submit(Sampled(n), &one).ok());
    EXPECT_TRUE(one.accepted().job_ids().empty());
  }
  EXPECT_EQ(s.Depth(), 5);
}

TEST(SchedulerChoicesTest, AllChoicesFitTheQueueAndTheClientLimitOrNoneIsStored) {
  SchedulerOptions options;
  options.max_queue = 4;
  ServedScheduler s(options);
  v1::SubmitResponse resp;
  ASSERT_TRUE(s.Submit(Sampled(3), &resp).ok());
  grpc::Status full = s.Submit(Sampled(2), &resp);
  EXPECT_EQ(full.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(full.error_message(), HasSubstr("--max-queue=4) for 2 more"));
  EXPECT_EQ(s.Depth(), 3);
  EXPECT_TRUE(s.Submit(Sampled(1), &resp).ok());

  options.max_queue = 1000;
  options.limits.max_queued_jobs_per_client = 2;
  ServedScheduler limited(options);
  grpc::Status over = limited.Submit(Sampled(3), &resp);
  EXPECT_EQ(over.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(IsClientJobLimit(services::FromGrpcStatus(over))) << over.error_message();
  EXPECT_EQ(limited.Depth(), 0);
  EXPECT_TRUE(limited.Submit(Sampled(2), &resp).ok());
}

TEST(SchedulerChoicesTest, ABadNIsRefusedNamingTheField) {
  ServedScheduler s(SchedulerOptions{});
  for (int n : {-1, kMaxChoices + 1}) {
    v1::SubmitResponse resp;
    const grpc::Status bad = s.Submit(Sampled(n), &resp);
    EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << n;
    EXPECT_EQ(services::FromGrpcStatus(bad).field(), "n") << bad.error_message();
    EXPECT_THAT(bad.error_message(), HasSubstr("n: must be in [0, 16]"));
  }
  EXPECT_EQ(s.Depth(), 0);
}

TEST(SchedulerChoicesTest, GenerateStreamsEveryChoiceWithItsIndexAndAChoiceEndsAlone) {
  ServedScheduler s(SchedulerOptions{});
  grpc::ClientContext ctx;
  auto stream = s.stub->Generate(&ctx, Sampled(3, 40));
  std::vector<std::string> job_ids(3);
  v1::JobEvent ev;
  for (int accepted = 0; accepted < 3;) {
    ASSERT_TRUE(stream->Read(&ev));
    if (!ev.has_accepted()) continue;
    ASSERT_GE(ev.index(), 0);
    ASSERT_LT(ev.index(), 3);
    EXPECT_EQ(ev.accepted().params().seed(), 40u + ev.index());
    ASSERT_EQ(ev.accepted().job_ids_size(), 3);
    EXPECT_EQ(ev.accepted().job_ids(ev.index()), ev.job_id());
    job_ids[static_cast<std::size_t>(ev.index())] = ev.job_id();
    ++accepted;
  }
  // No executor: every job waits. Choice 1 is cancelled; it ends alone, the others wait on.
  ASSERT_TRUE(s.core.CancelJob(job_ids[1]).ok());
  std::map<int, int> failed;  // index -> code
  while (failed.empty() && stream->Read(&ev)) {
    if (ev.has_failed()) failed[ev.index()] = ev.failed().code();
    if (ev.has_queued()) {
      EXPECT_EQ(ev.job_id(), job_ids[static_cast<std::size_t>(ev.index())]);
    }
  }
  EXPECT_THAT(failed, ElementsAre(std::pair<const int, int>(1, static_cast<int>(StatusCode::kCancelled))));
  EXPECT_EQ(ev.job_id(), job_ids[1]);
  EXPECT_EQ(s.Depth(), 2);
  // The stream ends once every choice has.
  ASSERT_TRUE(s.core.CancelJob(job_ids[0]).ok());
  ASSERT_TRUE(s.core.CancelJob(job_ids[2]).ok());
  while (stream->Read(&ev)) {
    if (ev.has_failed()) failed[ev.index()] = ev.failed().code();
  }
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(failed.size(), 3u);
}

}  // namespace
}  // namespace unmask::scheduler
