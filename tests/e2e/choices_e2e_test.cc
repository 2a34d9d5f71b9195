// n > 1 end to end: the real loader, executor and scheduler (tiny-llada) and a client calling
// the gRPC API as any gRPC client does. n sampled choices of one prompt are the single requests
// with seeds seed, seed + 1, ...; a choice that fails (cancelled) ends alone while the others
// complete; the `unmask` CLI's --n.
#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

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
    scheduler_ = stack_.StartScheduler({"--per-executor-limit", "1"});
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
