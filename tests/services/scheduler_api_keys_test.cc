// API keys through the real scheduler: SchedulerCore with the in-process job store, and its gRPC
// adapter on a real server on port 0. Missing and wrong keys get UNAUTHENTICATED, each key's
// own limits RESOURCE_EXHAUSTED naming the limit; health stays open.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "common/auth/api_key_file.h"
#include "common/jobs/memory_job_store.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "services/common/server_runner.h"
#include "services/scheduler/clamp_adapter.h"
#include "services/scheduler/scheduler_core.h"
#include "services/scheduler/scheduler_grpc.h"

namespace unmask::scheduler {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<auth::ApiKeys> Keys() {
  std::string text = "# test keys\n";
  for (const char* line : {"open-key|open", "two-jobs-key|two-jobs max_queued_jobs=2", "slow-key|slow requests_per_second=1"}) {
    const std::string s = line;
    const auto bar = s.find('|');
    text += *auth::FormatApiKeyLine(s.substr(0, bar), "", {}) + " " + s.substr(bar + 1) + "\n";
  }
  auto entries = auth::ParseApiKeyFile(text, "test");
  EXPECT_TRUE(entries.ok()) << entries.status().ToString();
  return std::make_shared<auth::ApiKeys>(*entries);
}

v1::GenerateRequest Request() {
  v1::GenerateRequest r;
  r.set_model("tiny-llada");
  for (int id : {11, 12, 13}) r.mutable_ids()->add_ids(id);
  r.mutable_params()->set_gen_length(8);
  r.mutable_params()->set_block_length(8);
  r.mutable_params()->set_steps(8);
  return r;
}

class SchedulerApiKeysTest : public ::testing::Test {
 protected:
  SchedulerApiKeysTest() {
    SchedulerOptions options;
    options.api_keys = Keys();
    catalog_ = std::make_unique<ModelCatalog>(std::vector<std::string>{std::string(UNMASK_TEST_DATA_DIR)});
    core_ = std::make_unique<SchedulerCore>(store_, [] { return std::vector<ExecutorSnapshot>{}; }, *catalog_,
                                            MakeClamper(fitting::ClampPolicy::kOff, 2), options);
  }
  const auth::ApiKey* Caller(const std::string& key) {
    auto caller = core_->Authenticate("Bearer " + key);
    EXPECT_TRUE(caller.ok()) << caller.status().ToString();
    return caller.ok() ? *caller : nullptr;
  }

  jobs::MemoryJobStore store_;
  std::unique_ptr<ModelCatalog> catalog_;
  std::unique_ptr<SchedulerCore> core_;
};

TEST_F(SchedulerApiKeysTest, WithoutKeysEveryCallerIsAnonymous) {
  ModelCatalog catalog({UNMASK_TEST_DATA_DIR});
  SchedulerCore open(store_, [] { return std::vector<ExecutorSnapshot>{}; }, catalog,
                     MakeClamper(fitting::ClampPolicy::kOff, 2), SchedulerOptions{});
  auto caller = open.Authenticate("");
  ASSERT_TRUE(caller.ok());
  EXPECT_EQ(*caller, nullptr);
  EXPECT_TRUE(open.Authenticate("Bearer anything").ok());
}

TEST_F(SchedulerApiKeysTest, MissingOrWrongKeysAreUnauthenticated) {
  EXPECT_EQ(core_->Authenticate("").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(core_->Authenticate("Bearer wrong").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(Caller("open-key")->name, "open");
}

TEST_F(SchedulerApiKeysTest, MaxQueuedJobsCountsAcceptedJobsUntilTheyEnd) {
  const auth::ApiKey* two = Caller("two-jobs-key");
  auto first = core_->Accept(Request(), "", two);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(core_->Accept(Request(), "", two).ok());
  auto third = core_->Accept(Request(), "", two);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(third.status().message(), HasSubstr("max_queued_jobs=2"));
  EXPECT_FALSE(IsQueueFull(third.status()));
  // Another key is not held back by this one's jobs; a refused bad request takes no slot.
  EXPECT_TRUE(core_->Accept(Request(), "", Caller("open-key")).ok());
  // The first job ends (cancelled while queued): its slot is free again.
  ASSERT_TRUE(core_->CancelJob(first->job_id()).ok());
  EXPECT_TRUE(core_->Accept(Request(), "", two).ok());
  EXPECT_FALSE(core_->Accept(Request(), "", two).ok());
}

TEST_F(SchedulerApiKeysTest, ABadRequestTakesNoJobSlot) {
  const auth::ApiKey* two = Caller("two-jobs-key");
  v1::GenerateRequest bad = Request();
  bad.mutable_params()->set_steps(-1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(core_->Accept(bad, "", two).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(core_->Accept(Request(), "", two).ok());
  EXPECT_TRUE(core_->Accept(Request(), "", two).ok());
}

TEST_F(SchedulerApiKeysTest, RequestsPerSecondIsCheckedWithTheKey) {
  EXPECT_TRUE(core_->Authenticate("Bearer slow-key").ok());
  auto second = core_->Authenticate("Bearer slow-key");  // within the same second
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(second.status().message(), HasSubstr("requests_per_second=1"));
}

class SchedulerGrpcApiKeysTest : public SchedulerApiKeysTest {
 protected:
  void SetUp() override {
    service_ = std::make_unique<SchedulerGrpcService>(*core_);
    runner_.AddService(service_.get());
    ASSERT_TRUE(runner_.Start("127.0.0.1:0").ok());
    runner_.SetServing(true);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(runner_.port()), grpc::InsecureChannelCredentials());
    stub_ = v1::Scheduler::NewStub(channel_);
  }
  void TearDown() override { runner_.Drain(std::chrono::seconds(1)); }
  grpc::Status ListModels(const std::string& authorization) {
    grpc::ClientContext ctx;
    if (!authorization.empty()) ctx.AddMetadata("authorization", authorization);
    v1::ListServedModelsResponse resp;
    return stub_->ListModels(&ctx, v1::ListServedModelsRequest(), &resp);
  }
  grpc::Status Submit(const std::string& key) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + key);
    v1::SubmitResponse resp;
    return stub_->Submit(&ctx, Request(), &resp);
  }

  std::unique_ptr<SchedulerGrpcService> service_;
  services::ServerRunner runner_{"Scheduler"};
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Scheduler::Stub> stub_;
};

TEST_F(SchedulerGrpcApiKeysTest, MetadataKeysAreChecked) {
  grpc::Status none = ListModels("");
  EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(none.error_message(), HasSubstr("authorization"));
  EXPECT_EQ(ListModels("Bearer wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ListModels("open-key").error_code(), grpc::StatusCode::UNAUTHENTICATED);  // no scheme
  EXPECT_TRUE(ListModels("Bearer open-key").ok());
}

TEST_F(SchedulerGrpcApiKeysTest, LimitsAreResourceExhaustedNamingTheLimit) {
  EXPECT_TRUE(Submit("two-jobs-key").ok());
  EXPECT_TRUE(Submit("two-jobs-key").ok());
  grpc::Status third = Submit("two-jobs-key");
  EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(third.error_message(), HasSubstr("max_queued_jobs=2"));
  EXPECT_TRUE(ListModels("Bearer slow-key").ok());
  grpc::Status fast = ListModels("Bearer slow-key");
  EXPECT_EQ(fast.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(fast.error_message(), HasSubstr("requests_per_second=1"));
}

TEST_F(SchedulerGrpcApiKeysTest, HealthNeedsNoKey) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext ctx;
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  ASSERT_TRUE(health->Check(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

}  // namespace
}  // namespace unmask::scheduler
