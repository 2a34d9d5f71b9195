// The request limits through the OpenAI-compatible HTTP API: the real
// cpp-httplib server on port 0 over the scheduler core and the in-process job
// store. Body size 413, prompt size 400, jobs per client 429, a deadline 504;
// each body names the flag (or field) that set the limit. And n > 1 counted as
// n jobs, and a choice that fails failing the request (its other choices
// cancelled).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/jobs/memory_job_store.h"
#include "services/scheduler/clamp_adapter.h"
#include "services/scheduler/http/completion_service.h"
#include "services/scheduler/http/http_server.h"
#include "services/scheduler/scheduler_core.h"

namespace unmask::scheduler::http {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

struct Reply {
  int status = 0;
  json body;
};

class HttpLimitsTest : public ::testing::Test {
protected:
  void Start(SchedulerOptions options, std::size_t max_body_bytes = 4u << 20, int http_threads = 32) {
    // An executor serving the model as the pool would report it (the HTTP API
    // refuses models no healthy executor serves); nothing runs the jobs, so
    // they wait in the queue.
    auto snapshots = [] {
      ExecutorSnapshot e;
      e.address = "127.0.0.1:1";
      e.healthy = true;
      e.models = {"tiny-llada"};
      e.device = "cpu";
      return std::vector<ExecutorSnapshot>{e};
    };
    catalog_ = std::make_unique<ModelCatalog>(
        std::vector<std::string>{std::string(UNMASK_TEST_DATA_DIR)});
    core_ = std::make_unique<SchedulerCore>(
        store_, snapshots, *catalog_, MakeClamper(fitting::ClampPolicy::kOff, 2),
        options);
    completions_ =
        std::make_unique<CompletionService>(*core_, *catalog_, snapshots);
    HttpServerOptions ho;
    ho.host = "127.0.0.1";
    ho.max_body_bytes = max_body_bytes;
    ho.threads = http_threads;
    server_ = std::make_unique<OpenAiHttpServer>(*completions_, ho);
    auto port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
  }
  void TearDown() override {
    if (server_)
      server_->Stop();
  }
  Reply Post(const std::string &body) {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(std::chrono::seconds(30));
    auto res = client.Post("/v1/completions", body, "application/json");
    if (!res)
      return {};
    return {res->status, json::parse(res->body, nullptr, false)};
  }
  static json Completion(const json &prompt) {
    return {{"model", "tiny-llada"},
            {"prompt", prompt},
            {"max_tokens", 8},
            {"steps", 8},
            {"block_length", 8}};
  }
  // Waits until `n` jobs are queued.
  void WaitForQueued(std::int64_t n) {
    for (int i = 0; i < 500 && *store_.QueueDepth() < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_EQ(*store_.QueueDepth(), n);
  }

  jobs::MemoryJobStore store_;
  std::unique_ptr<ModelCatalog> catalog_;
  std::unique_ptr<SchedulerCore> core_;
  std::unique_ptr<CompletionService> completions_;
  std::unique_ptr<OpenAiHttpServer> server_;
  int port_ = 0;
};

TEST_F(HttpLimitsTest, ABodyOverTheCapIs413NamingTheFlag) {
  Start(SchedulerOptions{}, /*max_body_bytes=*/1024);
  const Reply r = Post(Completion(std::string(2000, 'a')).dump());
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.body["error"]["code"], "request_too_large");
  EXPECT_THAT(r.body["error"]["message"].get<std::string>(),
              HasSubstr("--http-max-body-bytes"));
}

TEST_F(HttpLimitsTest, APromptOverTheCapsIs400NamingTheFlag) {
  SchedulerOptions o;
  o.limits.max_prompt_bytes = 100;
  o.limits.max_prompt_tokens = 4;
  o.limits.max_chat_messages = 2;
  Start(o);
  Reply r = Post(Completion(std::string(101, 'a')).dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["param"], "prompt");
  EXPECT_THAT(r.body["error"]["message"].get<std::string>(),
              HasSubstr("--max-prompt-bytes"));

  r = Post(Completion(json::array({1, 2, 3, 4, 5})).dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["param"], "prompt");
  EXPECT_THAT(r.body["error"]["message"].get<std::string>(),
              HasSubstr("--max-prompt-tokens"));

  httplib::Client client("127.0.0.1", port_);
  const json chat = {
      {"model", "tiny-llada"},
      {"messages", json::array({{{"role", "user"}, {"content", "a"}},
                                {{"role", "assistant"}, {"content", "b"}},
                                {{"role", "user"}, {"content", "c"}}})}};
  auto res =
      client.Post("/v1/chat/completions", chat.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_THAT(res->body, HasSubstr("--max-chat-messages"));
}

TEST_F(HttpLimitsTest, AClientOverItsJobCapGets429NamingTheFlag) {
  SchedulerOptions o;
  o.limits.max_queued_jobs_per_client = 1;
  Start(o);
  // The first request waits for its job (nothing runs it).
  auto first = std::async(std::launch::async, [&] {
    return Post(Completion(json::array({1, 2, 3})).dump());
  });
  WaitForQueued(1);
  const Reply second = Post(Completion(json::array({1, 2, 3})).dump());
  EXPECT_EQ(second.status, 429);
  EXPECT_EQ(second.body["error"]["code"], "client_limit");
  EXPECT_THAT(second.body["error"]["message"].get<std::string>(),
              HasSubstr("--max-queued-jobs-per-client=1"));
  EXPECT_EQ(*store_.QueueDepth(), 1); // the refused request stored nothing
  // Cancelling the first job ends its request and frees the client's slot.
  auto listed = core_->ListJobs(v1::ListJobsRequest());
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->jobs_size(), 1);
  ASSERT_TRUE(core_->CancelJob(listed->jobs(0).job_id()).ok());
  EXPECT_NE(first.get().status, 200);
  auto third = std::async(std::launch::async, [&] {
    return Post(Completion(json::array({1, 2, 3})).dump());
  });
  WaitForQueued(1);
  listed = core_->ListJobs(v1::ListJobsRequest());
  for (const auto &job : listed->jobs())
    (void)core_->CancelJob(job.job_id());
  third.get();
}

// Overload: a request that finds every HTTP thread busy is refused at once with 429, instead
// of waiting unseen in the server's queue for a thread.
TEST_F(HttpLimitsTest, ARequestThatFindsEveryThreadBusyGets429AtOnce) {
  Start(SchedulerOptions{}, 4u << 20, /*http_threads=*/1);
  auto first = std::async(std::launch::async, [&] {  // holds the one thread: nothing runs its job
    return Post(Completion(json::array({1, 2, 3})).dump());
  });
  WaitForQueued(1);
  const auto before = std::chrono::steady_clock::now();
  const Reply second = Post(Completion(json::array({1, 2, 3})).dump());
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(5));
  EXPECT_EQ(second.status, 429);
  EXPECT_EQ(second.body["error"]["code"], "queue_full");
  EXPECT_THAT(second.body["error"]["message"].get<std::string>(), HasSubstr("--http-threads=1"));
  EXPECT_EQ(*store_.QueueDepth(), 1);  // the refused request stored nothing
  auto listed = core_->ListJobs(v1::ListJobsRequest());
  ASSERT_TRUE(listed.ok());
  for (const auto& job : listed->jobs()) (void)core_->CancelJob(job.job_id());
  first.get();
  // The thread is free again once the first request's handler has returned, which may be a moment
  // after its reply reached the client: the next request is then served (and queued). A refusal
  // in that moment is retried (CI once saw it), for at most 50 tries.
  std::future<Reply> third;
  for (int attempt = 0; attempt < 50; ++attempt) {
    third = std::async(std::launch::async, [&] { return Post(Completion(json::array({1, 2, 3})).dump()); });
    if (third.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready) break;  // being served
    const Reply early = third.get();
    ASSERT_EQ(early.status, 429) << "a request that is served waits for its job";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(third.valid()) << "every try was refused: the thread never came back";
  WaitForQueued(1);
  listed = core_->ListJobs(v1::ListJobsRequest());
  for (const auto& job : listed->jobs()) (void)core_->CancelJob(job.job_id());
  EXPECT_NE(third.get().status, 429);
}

TEST_F(HttpLimitsTest, NChoicesAreNJobsAndAFailedChoiceFailsTheRequest) {
  SchedulerOptions o;
  o.limits.max_queued_jobs_per_client = 3;
  Start(o);
  json body = Completion(json::array({1, 2, 3}));
  body["n"] = 4;
  const Reply over = Post(body.dump());
  EXPECT_EQ(over.status, 429);
  EXPECT_EQ(over.body["error"]["code"], "client_limit");
  EXPECT_EQ(*store_.QueueDepth(), 0);

  body["n"] = 3;
  auto reply = std::async(std::launch::async, [&] { return Post(body.dump()); });
  WaitForQueued(3);
  auto listed = core_->ListJobs(v1::ListJobsRequest());
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->jobs_size(), 3);
  const std::string cancelled = listed->jobs(1).job_id();
  ASSERT_TRUE(core_->CancelJob(cancelled).ok());
  const Reply r = reply.get();
  EXPECT_EQ(r.status, 500) << r.body.dump();
  EXPECT_EQ(r.body["error"]["code"], "cancelled");
  EXPECT_THAT(r.body["error"]["message"].get<std::string>(), HasSubstr("(job " + cancelled + "): cancelled"));
  // Nobody waits for the other choices any more: they were cancelled too.
  listed = core_->ListJobs(v1::ListJobsRequest());
  for (const auto &job : listed->jobs()) EXPECT_EQ(job.state(), "cancelled") << job.job_id();
  EXPECT_EQ(*store_.QueueDepth(), 0);
}

TEST_F(HttpLimitsTest, AJobPastItsDeadlineIs504) {
  Start(SchedulerOptions{});
  json body = Completion(json::array({1, 2, 3}));
  body["deadline_seconds"] = 0.2;
  auto reply =
      std::async(std::launch::async, [&] { return Post(body.dump()); });
  WaitForQueued(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // What the dispatcher does when it takes the job: past its deadline, it
  // expires.
  auto claimed = store_.Claim("test", 0);
  ASSERT_TRUE(claimed.ok());
  EXPECT_FALSE(claimed->has_value());
  const Reply r = reply.get();
  EXPECT_EQ(r.status, 504);
  EXPECT_EQ(r.body["error"]["code"], "deadline_exceeded");
  EXPECT_THAT(r.body["error"]["message"].get<std::string>(),
              HasSubstr("deadline"));

  body["deadline_seconds"] = -1;
  const Reply bad = Post(body.dump());
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["param"], "deadline_seconds");
}

} // namespace
} // namespace unmask::scheduler::http
