// n > 1 end to end: the real loader, executor and scheduler (tiny-llada) and a client calling
// the gRPC API as any gRPC client does. n sampled choices of one prompt are the single requests
// with seeds seed, seed + 1, ...; a choice that fails (cancelled) ends alone while the others
// complete; over streamed HTTP its error ends the stream and names it, and the choices nobody
// reads any more are cancelled; the `unmask` CLI's --n.
#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/e2e/stack.h"
#include "unmask/v1/scheduler.grpc.pb.h"

namespace unmask::testing {
namespace {

using ::testing::HasSubstr;

v1::GenerateRequest Sampled(std::uint64_t seed, int n, int gen_length = 16) {
  v1::GenerateRequest r;
  r.set_model("tiny-llada");
  for (int id : {1, 2, 3}) r.mutable_ids()->add_ids(id);
  auto* p = r.mutable_params();
  p->set_gen_length(gen_length);
  p->set_block_length(gen_length);
  p->set_steps(gen_length);
  p->set_temperature(1.0);
  p->set_seed(seed);
  r.set_n(n);
  return r;
}

// What a Generate stream said about each choice, by index.
struct Choice {
  std::string job_id;
  std::uint64_t seed = 0;
  int accepted = 0, steps = 0;
  std::vector<std::int64_t> ids;  // completed
  int failed_code = -1;           // -1: not failed
};

// Reads the stream to its end; `on_accepted(index, job_id)` is called as each choice is accepted.
std::map<int, Choice> ReadChoices(v1::Scheduler::Stub& stub, const v1::GenerateRequest& request,
                                  const std::function<void(int, const std::string&)>& on_accepted = {}) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  auto stream = stub.Generate(&ctx, request);
  std::map<int, Choice> choices;
  v1::JobEvent ev;
  while (stream->Read(&ev)) {
    Choice& c = choices[ev.index()];
    c.job_id = ev.job_id();
    if (ev.has_accepted()) {
      ++c.accepted;
      c.seed = ev.accepted().params().seed();
      if (request.n() > 1) {
        EXPECT_EQ(ev.accepted().job_ids(ev.index()), ev.job_id());
      }
      if (on_accepted) on_accepted(ev.index(), ev.job_id());
    }
    c.steps += ev.has_step();
    if (ev.has_completed()) c.ids.assign(ev.completed().ids().begin(), ev.completed().ids().end());
    if (ev.has_failed()) c.failed_code = ev.failed().code();
  }
  const grpc::Status s = stream->Finish();
  EXPECT_TRUE(s.ok()) << s.error_message();
  return choices;
}

class ChoicesEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stack_.StartLoader();
    stack_.StartExecutor();
    // One job at a time on the executor: a second choice waits in the scheduler's queue.
    scheduler_ = stack_.StartScheduler({"--per-executor-limit", "1", "--http-port", "0"});
    stub_ = v1::Scheduler::NewStub(
        grpc::CreateChannel(stack_.scheduler_address(scheduler_), grpc::InsecureChannelCredentials()));
  }
  Stack stack_;
  int scheduler_ = 0;
  std::unique_ptr<v1::Scheduler::Stub> stub_;
};

TEST_F(ChoicesEndToEndTest, ChoiceIIsTheSingleRequestWithSeedPlusI) {
  const std::map<int, Choice> choices = ReadChoices(*stub_, Sampled(11, 3));
  ASSERT_EQ(choices.size(), 3u);
  for (const auto& [i, c] : choices) {
    SCOPED_TRACE("choice " + std::to_string(i));
    EXPECT_EQ(c.accepted, 1);
    EXPECT_EQ(c.seed, 11u + static_cast<std::uint64_t>(i));
    EXPECT_EQ(c.steps, 16);
    EXPECT_EQ(c.failed_code, -1);
    ASSERT_EQ(c.ids.size(), 16u);
    const std::map<int, Choice> single = ReadChoices(*stub_, Sampled(11 + static_cast<std::uint64_t>(i), 1));
    ASSERT_EQ(single.size(), 1u);
    EXPECT_EQ(single.at(0).ids, c.ids);
    // Each choice is a job like any other.
    grpc::ClientContext ctx;
    v1::GetJobRequest get;
    get.set_job_id(c.job_id);
    v1::JobInfo info;
    ASSERT_TRUE(stub_->GetJob(&ctx, get, &info).ok());
    EXPECT_EQ(info.state(), "succeeded");
    EXPECT_EQ(info.params().seed(), 11u + static_cast<std::uint64_t>(i));
  }
  EXPECT_FALSE(choices.at(0).ids == choices.at(1).ids && choices.at(1).ids == choices.at(2).ids)
      << "three seeds sampled the same 16 tokens";
}

TEST_F(ChoicesEndToEndTest, AChoiceThatFailsEndsAloneAndTheOthersComplete) {
  // Choice 1 waits in the queue behind choice 0 and is cancelled as soon as it is accepted.
  const std::map<int, Choice> choices = ReadChoices(*stub_, Sampled(5, 2, 32), [&](int index, const std::string& job) {
    if (index != 1) return;
    grpc::ClientContext ctx;
    v1::CancelJobRequest cancel;
    cancel.set_job_id(job);
    v1::CancelJobResponse state;
    EXPECT_TRUE(stub_->CancelJob(&ctx, cancel, &state).ok());
  });
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices.at(1).failed_code, static_cast<int>(grpc::StatusCode::CANCELLED));
  EXPECT_TRUE(choices.at(1).ids.empty());
  EXPECT_EQ(choices.at(0).failed_code, -1);
  EXPECT_EQ(choices.at(0).ids.size(), 32u);
}

// The data lines of a Server-Sent Events body, each parsed as JSON ("[DONE]" as the string).
std::vector<nlohmann::json> SseData(const std::string& body) {
  std::vector<nlohmann::json> out;
  std::stringstream in(body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("data: ", 0) != 0) continue;
    const std::string data = line.substr(6);
    out.push_back(data == "[DONE]" ? nlohmann::json(data) : nlohmann::json::parse(data, nullptr, false));
  }
  return out;
}

TEST_F(ChoicesEndToEndTest, AFailedChoiceEndsTheHttpStreamWithAnErrorNamingIt) {
  const int http_port = HttpPort(stack_.scheduler(scheduler_));
  ASSERT_GT(http_port, 0) << stack_.scheduler(scheduler_).output();
  httplib::Client client("127.0.0.1", http_port);
  client.set_read_timeout(120);
  const nlohmann::json body = {{"model", "tiny-llada"}, {"prompt", "In the beginning"}, {"max_tokens", 32},
                               {"temperature", 1.0},    {"seed", 5},                     {"n", 2},
                               {"stream", true}};
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body = body.dump();
  // As each choice's first chunk arrives, its job id is read; choice 1 (queued behind choice 0:
  // one job at a time) is cancelled through the gRPC API once both ids are known. (The two
  // choices' first chunks come in either order: cancelling on choice 1's alone could end the
  // stream before choice 0's id, which the end of the test needs, had arrived.)
  std::string received, cancelled;
  std::map<int, std::string> job_ids;
  req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    received.append(data, n);
    for (const auto& chunk : SseData(received)) {
      if (!chunk.is_object() || !chunk.contains("choices") || chunk["choices"].empty()) continue;
      const auto& choice = chunk["choices"][0];
      const std::string job = chunk.value("unmask", nlohmann::json::object()).value("job_id", "");
      if (!job.empty()) job_ids[choice.value("index", -1)] = job;
    }
    if (job_ids.count(0) && job_ids.count(1) && cancelled.empty()) {
      cancelled = job_ids[1];
      grpc::ClientContext ctx;
      v1::CancelJobRequest cancel;
      cancel.set_job_id(cancelled);
      v1::CancelJobResponse state;
      EXPECT_TRUE(stub_->CancelJob(&ctx, cancel, &state).ok());
    }
    return true;
  };
  httplib::Result res = client.send(req);
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200) << received;
  ASSERT_FALSE(cancelled.empty()) << "choice 1's job id never arrived:\n" << received;
  const std::vector<nlohmann::json> events = SseData(received);
  ASSERT_FALSE(events.empty());
  const nlohmann::json& last = events.back();
  ASSERT_TRUE(last.is_object() && last.contains("error")) << received;
  const std::string message = last["error"].value("message", "");
  EXPECT_THAT(message, HasSubstr("choice 1 (job " + cancelled + ")")) << received;
  EXPECT_THAT(message, HasSubstr("cancel")) << received;
  // The stream has ended, so nobody reads choice 0 any more: its job is cancelled rather than run
  // to the end for no one (over gRPC, where the stream goes on, it completes: the test above).
  ASSERT_TRUE(job_ids.count(0)) << received;
  std::string state;
  for (int i = 0; i < 600 && state != "cancelled"; ++i) {
    grpc::ClientContext ctx;
    v1::GetJobRequest get;
    get.set_job_id(job_ids[0]);
    v1::JobInfo info;
    ASSERT_TRUE(stub_->GetJob(&ctx, get, &info).ok());
    state = info.state();
    if (state != "cancelled") std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(state, "cancelled");
}

TEST_F(ChoicesEndToEndTest, TheCliTakesN) {
  CliResult r = stack_.Cli(scheduler_, "generate --json --model tiny-llada --prompt-ids 1,2,3 --gen-length 8 "
                                       "--temperature 1 --seed 3 --n 2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::map<int, int> completed;  // index -> events
  std::stringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    const auto ev = nlohmann::json::parse(line, nullptr, false);
    if (!ev.is_discarded() && ev.contains("completed")) ++completed[ev.value("index", 0)];
  }
  EXPECT_EQ(completed, (std::map<int, int>{{0, 1}, {1, 1}})) << r.out;
  r = stack_.Cli(scheduler_, "generate --model tiny-llada --prompt-ids 1,2,3 --gen-length 8 --temperature 1 --n 2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("[choice 1] job "));
  r = stack_.Cli(scheduler_, "submit --model tiny-llada --prompt-ids 1,2,3 --gen-length 8 --n 3");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3) << r.out;
  r = stack_.Cli(scheduler_, "generate --model tiny-llada --prompt-ids 1,2,3 --n 17");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("field: n"));
}

}  // namespace
}  // namespace unmask::testing
