// The scheduler's request limits through its gRPC adapter on a real server
// (port 0) over the in-process job store: message size, prompt size (bytes,
// chat messages, tokens), jobs per anonymous client, the whole queue, and
// deadlines (the job's own, the default, the gRPC deadline of Generate). Each
// refusal has its status code and names the flag that set it.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/jobs/memory_job_store.h"
#include "services/common/grpc_status.h"
#include "services/common/server_runner.h"
#include "services/scheduler/clamp_adapter.h"
#include "services/scheduler/request_limits.h"
#include "services/scheduler/scheduler_core.h"
#include "services/scheduler/scheduler_grpc.h"

namespace unmask::scheduler {
namespace {

using ::testing::HasSubstr;

v1::GenerateRequest IdsRequest(int ids = 3) {
  v1::GenerateRequest r;
  r.set_model("tiny-llada");
  for (int i = 0; i < ids; ++i)
    r.mutable_ids()->add_ids(11 + i);
  r.mutable_params()->set_gen_length(8);
  r.mutable_params()->set_block_length(8);
  r.mutable_params()->set_steps(8);
  return r;
}

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class SchedulerLimitsTest : public ::testing::Test {
protected:
  // Starts the core and its gRPC server with `options` (call once per test).
  void Start(SchedulerOptions options, int max_receive_bytes = 0) {
    catalog_ = std::make_unique<ModelCatalog>(
        std::vector<std::string>{std::string(UNMASK_TEST_DATA_DIR)});
    core_ = std::make_unique<SchedulerCore>(
        store_, [] { return std::vector<ExecutorSnapshot>{}; }, *catalog_,
        MakeClamper(fitting::ClampPolicy::kOff, 2), options);
    service_ = std::make_unique<SchedulerGrpcService>(*core_);
    runner_.AddService(service_.get());
    runner_.SetMaxReceiveMessageBytes(max_receive_bytes);
    ASSERT_TRUE(runner_.Start("127.0.0.1:0").ok());
    runner_.SetServing(true);
    stub_ = v1::Scheduler::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(runner_.port()),
                            grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (core_)
      runner_.Drain(std::chrono::seconds(1));
  }
  grpc::Status Submit(const v1::GenerateRequest &r,
                      v1::SubmitResponse *resp = nullptr) {
    grpc::ClientContext ctx;
    v1::SubmitResponse ignored;
    return stub_->Submit(&ctx, r, resp != nullptr ? resp : &ignored);
  }

  jobs::MemoryJobStore store_;
  std::unique_ptr<ModelCatalog> catalog_;
  std::unique_ptr<SchedulerCore> core_;
  std::unique_ptr<SchedulerGrpcService> service_;
  services::ServerRunner runner_{"Scheduler"};
  std::unique_ptr<v1::Scheduler::Stub> stub_;
};

TEST_F(SchedulerLimitsTest,
       AMessageOverTheReceiveLimitIsResourceExhaustedNamingTheLimit) {
  Start(SchedulerOptions{}, /*max_receive_bytes=*/64 * 1024);
  v1::GenerateRequest big = IdsRequest();
  big.set_text(std::string(100 * 1024, 'a'));
  grpc::Status s = Submit(big);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(
      s.error_message(),
      HasSubstr(
          "65536")); // gRPC's message: "... larger than max (N vs. 65536)"
  EXPECT_TRUE(Submit(IdsRequest()).ok()); // the server goes on
}

TEST_F(SchedulerLimitsTest, PromptBytesAreCappedForTextAndChat) {
  SchedulerOptions o;
  o.limits.max_prompt_bytes = 1000;
  Start(o);
  v1::GenerateRequest text = IdsRequest();
  text.set_text(std::string(1001, 'a'));
  grpc::Status s = Submit(text);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("text: must be at most 1000 bytes (the scheduler's "
                        "--max-prompt-bytes), got 1001"));
  EXPECT_EQ(services::FromGrpcStatus(s).field(), "text");

  v1::GenerateRequest chat = IdsRequest();
  for (int i = 0; i < 3; ++i) {
    auto *m = chat.mutable_chat()->add_messages();
    m->set_role(i % 2 == 0 ? "user" : "assistant");
    m->set_content(std::string(400, 'b'));
  }
  s = Submit(chat);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("chat.messages: must be at most 1000 bytes of content, tool calls and tools "
                        "(the scheduler's --max-prompt-bytes), got 1200"));
  EXPECT_EQ(services::FromGrpcStatus(s).field(), "chat.messages");
}

TEST_F(SchedulerLimitsTest, ChatMessagesAreCapped) {
  SchedulerOptions o;
  o.limits.max_chat_messages = 2;
  Start(o);
  v1::GenerateRequest chat = IdsRequest();
  for (const char *role : {"user", "assistant", "user"}) {
    auto *m = chat.mutable_chat()->add_messages();
    m->set_role(role);
    m->set_content("hi");
  }
  grpc::Status s = Submit(chat);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("--max-chat-messages"));
  EXPECT_THAT(s.error_message(), HasSubstr("got 3"));
}

TEST_F(SchedulerLimitsTest, PromptTokensAreCapped) {
  SchedulerOptions o;
  o.limits.max_prompt_tokens = 4;
  Start(o);
  EXPECT_TRUE(Submit(IdsRequest(4)).ok());
  grpc::Status s = Submit(IdsRequest(5));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("ids: must be at most 4 token ids (the scheduler's "
                        "--max-prompt-tokens), got 5"));
  EXPECT_EQ(services::FromGrpcStatus(s).field(), "ids");
  EXPECT_EQ(CheckPromptTokens(5, o.limits).field(), "prompt");
  // An encoded prompt is checked after encoding, with the same flag.
  EXPECT_THAT(CheckPromptTokens(5, o.limits).message(),
              HasSubstr("prompt: must be at most 4 tokens once encoded"));
  EXPECT_TRUE(CheckPromptTokens(4, o.limits).ok());
}

TEST_F(SchedulerLimitsTest, AnAnonymousClientHoldsAtMostItsShareOfTheQueue) {
  SchedulerOptions o;
  o.limits.max_queued_jobs_per_client = 2;
  Start(o);
  v1::SubmitResponse first;
  ASSERT_TRUE(Submit(IdsRequest(), &first).ok());
  ASSERT_TRUE(Submit(IdsRequest()).ok());
  grpc::Status third = Submit(IdsRequest());
  EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(third.error_message(),
              HasSubstr("client 127.0.0.1 has 2 jobs queued or running"));
  EXPECT_THAT(third.error_message(),
              HasSubstr("--max-queued-jobs-per-client=2"));
  // The reason comes over the wire (ErrorInfo), not from the message.
  const Status refused = services::FromGrpcStatus(third);
  EXPECT_TRUE(IsClientJobLimit(refused));
  EXPECT_EQ(refused.reason(), "CLIENT_JOB_LIMIT");
  EXPECT_EQ(refused.detail()->metadata.at("limit"), "2");
  EXPECT_FALSE(IsQueueFull(refused));
  EXPECT_FALSE(IsClientJobLimit(
      Status(StatusCode::kResourceExhausted, third.error_message())));
  // A bad request takes no slot; a job that ends gives its slot back.
  v1::GenerateRequest bad = IdsRequest();
  bad.mutable_params()->set_steps(-1);
  EXPECT_EQ(Submit(bad).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(core_->CancelJob(first.job_id()).ok());
  EXPECT_TRUE(Submit(IdsRequest()).ok());
  EXPECT_EQ(Submit(IdsRequest()).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  // Another client (here the core called directly with another address) is not
  // held back.
  CallInfo other;
  other.client = "10.0.0.9";
  EXPECT_TRUE(core_->Accept(IdsRequest(), "", nullptr, other).ok());
}

TEST_F(SchedulerLimitsTest, AFullQueueNamesMaxQueue) {
  SchedulerOptions o;
  o.max_queue = 1;
  Start(o);
  ASSERT_TRUE(Submit(IdsRequest()).ok());
  grpc::Status s = Submit(IdsRequest());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("--max-queue=1"));
  const Status full = services::FromGrpcStatus(s);
  EXPECT_TRUE(IsQueueFull(full));
  EXPECT_EQ(full.reason(), "QUEUE_FULL");
  EXPECT_EQ(full.detail()->metadata.at("limit"), "1");
  EXPECT_FALSE(IsClientJobLimit(full));
  // The message alone (as parsing it used to decide) is not a full queue.
  EXPECT_FALSE(
      IsQueueFull(Status(StatusCode::kResourceExhausted, s.error_message())));
}

TEST_F(SchedulerLimitsTest, TheJobDeadlineIsTheRequestsOrTheDefault) {
  SchedulerOptions o;
  o.default_deadline_seconds = 60;
  Start(o);
  const std::int64_t before = NowMs();
  v1::SubmitResponse defaulted, own;
  ASSERT_TRUE(Submit(IdsRequest(), &defaulted).ok());
  v1::GenerateRequest r = IdsRequest();
  r.set_deadline_seconds(5);
  ASSERT_TRUE(Submit(r, &own).ok());
  const std::int64_t after = NowMs();
  auto d = store_.Get(defaulted.job_id());
  ASSERT_TRUE(d.ok());
  EXPECT_GE(d->deadline_unix_ms, before + 60'000);
  EXPECT_LE(d->deadline_unix_ms, after + 60'000);
  auto j = store_.Get(own.job_id());
  ASSERT_TRUE(j.ok());
  EXPECT_GE(j->deadline_unix_ms, before + 5'000);
  EXPECT_LE(j->deadline_unix_ms, after + 5'000);

  r.set_deadline_seconds(-1);
  grpc::Status bad = Submit(r);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("deadline_seconds"));
}

TEST_F(SchedulerLimitsTest,
       GenerateHonoursTheCallDeadlineAndTheJobExpiresWithIt) {
  Start(SchedulerOptions{}); // no executor: the job can only wait
  grpc::ClientContext ctx;
  const auto deadline =
      std::chrono::system_clock::now() + std::chrono::milliseconds(500);
  ctx.set_deadline(deadline);
  auto stream = stub_->Generate(&ctx, IdsRequest());
  v1::JobEvent ev;
  ASSERT_TRUE(stream->Read(&ev));
  ASSERT_TRUE(ev.has_accepted());
  const std::string job_id = ev.job_id();
  while (stream->Read(&ev)) {
  }
  grpc::Status s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);

  // The job carries the call's deadline, so it does not outlive its caller: a
  // dispatcher that claims it now finds it expired (DEADLINE_EXCEEDED to anyone
  // watching).
  auto record = store_.Get(job_id);
  ASSERT_TRUE(record.ok());
  const std::int64_t deadline_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline.time_since_epoch())
          .count();
  EXPECT_NEAR(static_cast<double>(record->deadline_unix_ms),
              static_cast<double>(deadline_ms), 50);
  while (NowMs() <= record->deadline_unix_ms)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto claimed = store_.Claim("test", 0);
  ASSERT_TRUE(claimed.ok());
  EXPECT_FALSE(claimed->has_value());
  auto info = core_->GetJob(job_id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->state(), "expired");
  EXPECT_EQ(info->error().code(),
            static_cast<int>(StatusCode::kDeadlineExceeded));

  // Submit's deadline covers the acknowledgement only: the job keeps none of
  // its own.
  grpc::ClientContext submit_ctx;
  submit_ctx.set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(5));
  v1::SubmitResponse resp;
  ASSERT_TRUE(stub_->Submit(&submit_ctx, IdsRequest(), &resp).ok());
  EXPECT_EQ(store_.Get(resp.job_id())->deadline_unix_ms, 0);
}

TEST(RequestLimits, BadLimitsNameTheFlag) {
  RequestLimits l;
  EXPECT_TRUE(ValidateRequestLimits(l).ok());
  l.max_prompt_bytes = 0;
  EXPECT_THAT(ValidateRequestLimits(l).message(),
              HasSubstr("--max-prompt-bytes"));
  l = RequestLimits();
  l.max_chat_messages = 0;
  EXPECT_THAT(ValidateRequestLimits(l).message(),
              HasSubstr("--max-chat-messages"));
  l = RequestLimits();
  l.max_prompt_tokens = -1;
  EXPECT_THAT(ValidateRequestLimits(l).message(),
              HasSubstr("--max-prompt-tokens"));
  l = RequestLimits();
  l.max_queued_jobs_per_client = -1;
  EXPECT_THAT(ValidateRequestLimits(l).message(),
              HasSubstr("--max-queued-jobs-per-client"));
}

TEST(RequestLimits, ClientAddressDropsThePort) {
  EXPECT_EQ(ClientAddress("ipv4:10.0.0.7:51234"), "10.0.0.7");
  EXPECT_EQ(ClientAddress("ipv6:[::1]:51234"), "::1");
  EXPECT_EQ(ClientAddress("unix:/tmp/s"), "unix:/tmp/s");
}

} // namespace
} // namespace unmask::scheduler
