// Focused end-to-end regressions for what the chaos test (chaos_e2e_test.cc) found, each on the
// real binaries with one kill at a chosen moment instead of many at random ones.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "tests/e2e/chaos_client.h"
#include "tests/e2e/chaos_ledger.h"
#include "tests/e2e/stack.h"

namespace unmask::testing {
namespace {

using Clock = std::chrono::steady_clock;

v1::GenerateRequest LongJob(std::int64_t gen_length) {
  v1::GenerateRequest r;
  r.set_model("tiny-llada");
  for (int id : {4, 5, 6}) r.mutable_ids()->add_ids(id);
  r.mutable_params()->set_gen_length(gen_length);
  r.mutable_params()->set_block_length(gen_length);
  r.mutable_params()->set_steps(gen_length);
  return r;
}

int RunsOf(const std::string& job_id, const Process& executor) {
  const auto runs = ExecutorRunsByJob({&executor});
  const auto found = runs.find(job_id);
  return found == runs.end() ? 0 : found->second;
}

// A job that finishes on its executor while redis-server is down keeps its result: the
// scheduler stores it once Redis is back, instead of dropping it and leaving the delivery to the
// reaper, which ran the job a second time (or, after enough of that, dead-lettered it).
TEST(ChaosRegressionTest, AResultThatArrivesWhileRedisRestartsIsStoredNotRunAgain) {
  Stack stack;
  stack.StartRedis(/*append_only=*/true, {"--appendfsync", "always"});
  stack.StartLoader();
  stack.StartExecutor();
  // A reaper far away: the result must be stored by the dispatcher that got it.
  const int s = stack.StartScheduler({"--reaper-min-idle-ms", "60000"});
  ChaosClient client(stack.scheduler_address(s), Clock::now() + std::chrono::seconds(120));
  const auto submitted = client.Submit(LongJob(64));
  ASSERT_FALSE(submitted.job_id.empty()) << submitted.error;
  const std::string& id = submitted.job_id;

  std::string state;
  for (int i = 0; i < 3000 && state != "running"; ++i) {
    state = client.GetJob(id).info.state();
    if (state != "running") std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(state, "running");
  stack.KillRedis();
  ASSERT_EQ(RunsOf(id, stack.executor(0)), 0) << "the job ended before Redis went down; make it longer";
  ASSERT_FALSE(stack.executor(0).WaitForLine("job_id=" + id + " msg=\"job done\"", std::chrono::seconds(120)).empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the scheduler meets the outage
  stack.ReviveRedis();

  const auto until = Clock::now() + std::chrono::seconds(20);
  ChaosClient checker(stack.scheduler_address(s), until);
  ChaosClient::Looked looked;
  while (Clock::now() < until) {
    looked = checker.GetJob(id);
    if (!looked.error.empty() || looked.info.state() != "running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(looked.error, "");
  EXPECT_EQ(looked.info.state(), "succeeded");
  EXPECT_EQ(looked.info.attempts(), 0);
  EXPECT_EQ(looked.info.result().ids_size(), 64);
  EXPECT_EQ(RunsOf(id, stack.executor(0)), 1);
  const WatchOutcome watched = checker.WatchToEnd(id);
  EXPECT_TRUE(watched.completed) << watched.failed_message << watched.last_error;
}

}  // namespace
}  // namespace unmask::testing
