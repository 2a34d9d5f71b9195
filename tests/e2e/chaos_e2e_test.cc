// No job lost: jobs are submitted from client threads to the real stack (loader, two executors,
// a scheduler, redis-server with appendonly yes + appendfsync always) while a chaos thread
// SIGKILLs and restarts executors, the scheduler and redis-server at seeded random moments.
// Every accepted job (Submit returned an id) must end exactly once: completed with its result, or
// failed with a reason a client can read. Duplicated executor runs are counted and reported.
//
// Sized by environment variables (CI runs the defaults):
//   UNMASK_CHAOS_JOBS (100)  UNMASK_CHAOS_SEED (1)  UNMASK_CHAOS_ROUNDS (2: kills of each kind
//   at least)  UNMASK_CHAOS_CLIENTS (8)  UNMASK_CHAOS_BUDGET_SECONDS (240)
// The 1,000-job run of docs/reliability.md:
//   UNMASK_CHAOS_JOBS=1000 UNMASK_CHAOS_ROUNDS=10 build/tests/e2e/chaos_e2e_tests
// UNMASK_CHAOS_LOG_DIR=dir writes every process's output (killed ones included) there.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include "common/jobs/redis_job_store.h"
#include "tests/e2e/chaos_client.h"
#include "tests/e2e/chaos_ledger.h"
#include "tests/e2e/chaos_monkey.h"
#include "tests/e2e/stack.h"

namespace unmask::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t EnvInt(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoll(v) : fallback;
}

constexpr std::int64_t kGenLength = 8;

v1::GenerateRequest JobRequest(std::uint64_t seed, int k) {
  v1::GenerateRequest r;
  r.set_model("tiny-llada");
  for (int id : {1 + k % 40, 2 + (k / 40) % 40, 3}) r.mutable_ids()->add_ids(id);
  r.mutable_params()->set_gen_length(kGenLength);
  r.mutable_params()->set_block_length(kGenLength);
  r.mutable_params()->set_steps(kGenLength);
  r.set_idempotency_key("chaos-" + std::to_string(seed) + "-" + std::to_string(k));
  return r;
}

// The job's event log straight from Redis: terminal and started events.
void CountEvents(jobs::JobStore& store, const std::string& id, FinalView& view) {
  std::int64_t next = 0;
  for (;;) {
    auto batch = store.ReadEvents(id, next, 0);
    if (!batch.ok()) return;
    for (const auto& bytes : batch->events) {
      v1::JobEvent ev;
      if (!ev.ParseFromString(bytes)) continue;
      view.terminal_events += ev.has_completed() || ev.has_failed();
      view.started_events += ev.has_started();
    }
    if (batch->events.empty() || batch->finished) return;
    next = batch->next_index;
  }
}

TEST(ChaosEndToEndTest, EveryAcceptedJobEndsExactlyOnceWhileProcessesAreKilled) {
  const int job_count = static_cast<int>(EnvInt("UNMASK_CHAOS_JOBS", 100));
  const auto seed = static_cast<std::uint64_t>(EnvInt("UNMASK_CHAOS_SEED", 1));
  const int min_rounds = static_cast<int>(EnvInt("UNMASK_CHAOS_ROUNDS", 2));
  const int client_count = static_cast<int>(EnvInt("UNMASK_CHAOS_CLIENTS", 8));
  const auto budget = std::chrono::seconds(EnvInt("UNMASK_CHAOS_BUDGET_SECONDS", 240));

  Stack stack;
  stack.StartRedis(/*append_only=*/true, {"--appendfsync", "always"});
  stack.StartLoader();
  stack.StartExecutor();
  stack.StartExecutor();
  const int s = stack.StartScheduler({"--reaper-min-idle-ms", "3000"});

  const auto began = Clock::now();
  const auto give_up = began + budget;
  ChaosPlan plan;
  plan.seed = seed;
  plan.scheduler = s;
  ChaosMonkey monkey(stack, plan);
  monkey.Start();

  // Clients: submit, then watch to the end; the jobs are spread over the chaos rounds asked for
  // (a client waits for round r before it takes job number r * jobs / rounds).
  std::vector<JobRun> runs(job_count);
  std::atomic<int> next{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < client_count; ++c) {
    clients.emplace_back([&] {
      ChaosClient client(stack.scheduler_address(s), give_up);
      for (int k; (k = next++) < job_count;) {
        monkey.WaitForRounds(static_cast<int>(static_cast<std::int64_t>(k) * min_rounds / job_count));
        JobRun& run = runs[k];
        const v1::GenerateRequest request = JobRequest(seed, k);
        run.idempotency_key = request.idempotency_key();
        run.gen_length = kGenLength;
        run.submitted = client.Submit(request);
        if (!run.submitted.job_id.empty()) run.watched = client.WatchToEnd(run.submitted.job_id);
      }
    });
  }
  for (auto& t : clients) t.join();
  monkey.WaitForRounds(min_rounds);
  monkey.Stop();
  const double wall = std::chrono::duration<double>(Clock::now() - began).count();
  ASSERT_EQ(monkey.error(), "") << "the stack could not be restarted";

  // The books: every accepted job as the scheduler and the job store tell it now.
  jobs::RedisJobStoreOptions options;
  options.endpoint.port = std::atoi(stack.redis_address().substr(stack.redis_address().rfind(':') + 1).c_str());
  auto store = jobs::RedisJobStore::Connect(options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::vector<const Process*> processes;
  for (const auto& p : stack.retired()) processes.push_back(p.get());
  for (int e = 0; e < plan.executors; ++e) processes.push_back(&stack.executor(e));
  processes.push_back(&stack.scheduler(s));
  const auto executor_runs = ExecutorRunsByJob(processes);
  if (const char* dir = std::getenv("UNMASK_CHAOS_LOG_DIR")) {  // every process's output, for a post-mortem
    for (std::size_t i = 0; i < processes.size(); ++i)
      std::ofstream(std::string(dir) + "/process-" + std::to_string(i) + ".log") << processes[i]->output();
  }
  ChaosClient checker(stack.scheduler_address(s), Clock::now() + std::chrono::seconds(60));
  std::map<std::string, FinalView> finals;
  for (const JobRun& run : runs) {
    const std::string& id = run.submitted.job_id;
    if (id.empty()) continue;
    FinalView& view = finals[id];
    view.looked = checker.GetJob(id);
    CountEvents(**store, id, view);
    const auto ran = executor_runs.find(id);
    view.executor_runs = ran == executor_runs.end() ? 0 : ran->second;
  }
  const ChaosTally tally = Tally(runs, finals);
  const ChaosCounts kills = monkey.counts();

  std::ostringstream report;
  report << "chaos run: seed " << seed << ", " << client_count << " clients, " << wall << " s\n"
         << "executor kills " << kills.executor_kills << ", scheduler kills " << kills.scheduler_kills
         << ", redis-server restarts " << kills.redis_restarts << "\n"
         << Summary(tally);
  for (const auto& line : monkey.timeline()) report << "  " << line << "\n";
  for (const auto& p : tally.problems) report << "  problem: " << p << "\n";
  std::cout << report.str();

  EXPECT_GE(kills.executor_kills, min_rounds);
  EXPECT_GE(kills.scheduler_kills, min_rounds);
  EXPECT_GE(kills.redis_restarts, min_rounds);
  EXPECT_EQ(tally.refused, 0) << report.str();
  EXPECT_EQ(tally.accepted, job_count) << report.str();
  EXPECT_EQ(tally.lost, 0) << report.str();
  EXPECT_EQ(tally.completed + tally.failed, tally.accepted) << report.str();
  EXPECT_EQ(tally.failed_without_reason, 0) << report.str();
  EXPECT_EQ(tally.ended_twice, 0) << report.str();
  EXPECT_EQ(tally.watch_disagrees, 0) << report.str();
  EXPECT_EQ(tally.wrong_result, 0) << report.str();
}

}  // namespace
}  // namespace unmask::testing
