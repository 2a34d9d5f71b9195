// End-to-end: the real binaries (loader, executors, schedulers, redis-server, the unmask CLI)
// on loopback, used the way a user uses them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/e2e/cli_json.h"
#include "tests/e2e/stack.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

json GoldenCase(int index, const std::string& file = "tiny-llada.golden.json") {
  std::ifstream in(TestDataPath(file));
  return json::parse(in)["cases"][index];
}

std::string SubmitLong(const Stack& stack, int scheduler, int gen_length = 256) {
  const std::string n = std::to_string(gen_length);
  CliResult r = stack.Cli(scheduler, "submit --model tiny-llada --prompt-ids 1,2,3 --gen-length " + n + " --block-length " + n +
                                         " --steps " + n);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::string id = r.out;
  while (!id.empty() && (id.back() == '\n' || id.back() == '\r')) id.pop_back();
  return id;
}

json Job(const Stack& stack, int scheduler, const std::string& id) {
  CliResult r = stack.Cli(scheduler, "jobs --json --limit 1000");
  auto j = json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("jobs")) return json();
  for (const auto& job : j["jobs"]) {
    if (job["job_id"] == id) return job;
  }
  return json();
}

TEST(ServicesEndToEndTest, GenerateThroughTheWholeStackMatchesTheGoldenOutput) {
  Stack stack;
  stack.StartLoader();
  stack.StartExecutor();
  const int s = stack.StartScheduler();
  EXPECT_THAT(stack.scheduler(s).output(), HasSubstr("jobs do not survive a restart"));

  const json c = GoldenCase(0);
  CliResult r = stack.Cli(s, "generate --model tiny-llada --prompt-ids " + IdList(c["prompt"][0]) +
                                 " --gen-length 16 --block-length 16 --steps 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto events = JsonLines(r.out);
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(events.front().contains("accepted")) << r.out;
  int steps = 0, started = 0;
  for (const auto& ev : events) {
    steps += ev.contains("step");
    started += ev.contains("started");
  }
  EXPECT_EQ(steps, 16);
  EXPECT_EQ(started, 1);
  EXPECT_EQ(CompletedIds(events), c["output"][0].get<std::vector<std::int64_t>>());

  // Text in through the chat template, text out.
  r = stack.Cli(s, "generate --model tiny-llada --chat 'Hello there' --gen-length 8 --block-length 8 --steps 8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(JsonLines(r.out).back().contains("completed")) << r.out;

  // Bad input is refused naming the field; an unknown model is NOT_FOUND.
  r = stack.Cli(s, "generate --model tiny-llada --prompt-ids 1,2 --gen-length 12 --block-length 8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("params.block_length: must divide gen_length (12), got 8"));
  EXPECT_THAT(r.out, HasSubstr("field: params.block_length"));
  r = stack.Cli(s, "generate --model nope --prompt-ids 1,2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("'nope'"));

  r = stack.Cli(s, "models");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("tiny-llada"));
  for (const std::string& addr : {stack.loader_address(), stack.executor_address(0), stack.scheduler_address(s)}) {
    r = stack.Cli(s, "health --addr " + addr);
    EXPECT_EQ(r.exit_code, 0) << addr << ": " << r.out;
    EXPECT_THAT(r.out, HasSubstr("SERVING"));
  }
}

// A mixture-of-experts checkpoint (LLaDA-MoE, its Hugging Face layout as published) served by the
// real loader, executor and scheduler, as any LLaDA checkpoint is: the official generate()'s ids
// through the reference sampler (float32 compute over the bf16 weights, as the golden was made),
// and a sampled case with its seed; then the same model loaded with int8 weights (quantized per
// expert) still serves.
TEST(ServicesEndToEndTest, AMixtureOfExpertsCheckpointIsServedEndToEnd) {
  Stack stack(TestDataPath("tiny-llada-moe"), "tiny-llada-moe");
  stack.StartLoader();
  stack.StartExecutor({"--precision", "fp32"});
  const int s = stack.StartScheduler();
  for (int index : {1, 4}) {
    SCOPED_TRACE("golden case " + std::to_string(index));
    const json c = GoldenCase(index, "tiny-llada-moe.golden.json");
    ASSERT_EQ(c["model"], "tiny-llada-moe");
    const std::string args =
        "generate --model tiny-llada-moe --prompt-ids " + IdList(c["prompt"][0]) + " --gen-length " +
        std::to_string(c["gen_length"].get<int>()) + " --block-length " + std::to_string(c["block_length"].get<int>()) +
        " --steps " + std::to_string(c["steps"].get<int>()) + " --temperature " +
        std::to_string(c["temperature"].get<double>()) + " --seed " + std::to_string(c["seed"].get<int>()) + " --json";
    CliResult r = stack.Cli(s, args);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(CompletedIds(JsonLines(r.out)), c["output"][0].get<std::vector<std::int64_t>>()) << r.out;
  }
  // Text in, through the checkpoint's own tokenizer; the mask id comes from tokenizer_config.json.
  CliResult r = stack.Cli(s, "generate --model tiny-llada-moe --prompt 'In the beginning' --gen-length 8 "
                             "--block-length 8 --steps 8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(CompletedIds(JsonLines(r.out)).size(), 8u) << r.out;
  // Chat, in the Ling template the checkpoint ships (<role>HUMAN</role>...; LLaDA's template is
  // refused by this tokenizer, which lacks its special tokens).
  r = stack.Cli(s, "generate --model tiny-llada-moe --chat 'Who are you?' --gen-length 8 --block-length 8 --steps 8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(CompletedIds(JsonLines(r.out)).size(), 8u) << r.out;

  Stack int8(TestDataPath("tiny-llada-moe"), "tiny-llada-moe");
  int8.StartLoader();
  int8.StartExecutor({"--load-precision", "int8"});
  const int s8 = int8.StartScheduler();
  r = int8.Cli(s8, "generate --model tiny-llada-moe --prompt-ids 17,230,45 --gen-length 8 --block-length 8 --steps 8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(CompletedIds(JsonLines(r.out)).size(), 8u) << r.out;
}

TEST(ServicesEndToEndTest, RedisJobsCanBeWatchedCancelledAndResubmittedFromAnyReplica) {
  Stack stack;
  stack.StartRedis();
  stack.StartLoader();
  stack.StartExecutor();
  const int a = stack.StartScheduler();
  const int b = stack.StartScheduler();
  EXPECT_THAT(stack.scheduler(a).output(), HasSubstr("Redis job store"));

  CliResult r = stack.Cli(a, "submit --model tiny-llada --prompt-ids 5,6,7 --gen-length 16 --block-length 8 --steps 16 --idempotency-key k1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  CliResult again = stack.Cli(b, "submit --model tiny-llada --prompt-ids 5,6,7 --gen-length 16 --block-length 8 --steps 16 --idempotency-key k1");
  EXPECT_EQ(again.out.substr(0, again.out.find('\n')), id) << "a retried submit ran twice";

  r = stack.Cli(b, "watch " + id + " --json");  // from the replica that did not accept it
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(CompletedIds(JsonLines(r.out)).size(), 16u) << r.out;

  const std::string long_id = SubmitLong(stack, a);
  r = stack.Cli(b, "cancel " + long_id);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = stack.Cli(a, "watch " + long_id + " --json");
  const auto events = JsonLines(r.out);
  ASSERT_FALSE(events.empty()) << r.out;
  ASSERT_TRUE(events.back().contains("failed")) << r.out;
  EXPECT_EQ(events.back()["failed"]["code"], 1);  // CANCELLED
}

TEST(ServicesEndToEndTest, JobsOfAKilledSchedulerAreFinishedByAnother) {
  Stack stack;
  stack.StartRedis();
  stack.StartLoader();
  const int a = stack.StartScheduler();  // no executors yet: its jobs wait
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    CliResult r = stack.Cli(a, "submit --model tiny-llada --prompt-ids " + std::to_string(10 + i) +
                                   ",2,3 --gen-length 8 --block-length 8 --steps 8");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    ids.push_back(r.out.substr(0, r.out.find('\n')));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let it claim some of them
  stack.scheduler(a).Kill(SIGKILL);
  stack.scheduler(a).Wait();

  stack.StartExecutor();
  const int b = stack.StartScheduler({"--reaper-min-idle-ms", "1000"});
  for (const auto& id : ids) {
    CliResult r = stack.Cli(b, "--timeout 60 watch " + id + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(CompletedIds(JsonLines(r.out)).size(), 8u) << "job " << id << " was lost:\n" << r.out;
  }
}

TEST(ServicesEndToEndTest, AJobOfAKilledExecutorIsFinishedElsewhere) {
  Stack stack;
  stack.StartRedis();
  stack.StartLoader();
  stack.StartExecutor();
  stack.StartExecutor();
  const int s = stack.StartScheduler();
  const std::string id = SubmitLong(stack, s, 128);
  std::string executor;
  for (int i = 0; i < 300 && executor.empty(); ++i) {
    json job = Job(stack, s, id);
    if (!job.is_null() && job.value("state", "") == "running" && !job.value("executor", "").empty()) executor = job["executor"];
    if (executor.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(executor.empty()) << "the job never started";
  const int victim = executor == "executor-0" ? 0 : 1;
  stack.executor(victim).Kill(SIGKILL);
  stack.executor(victim).Wait();

  CliResult r = stack.Cli(s, "--timeout 280 watch " + id + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto events = JsonLines(r.out);
  EXPECT_EQ(CompletedIds(events).size(), 128u) << r.out;
  std::vector<std::string> runners;
  for (const auto& ev : events) {
    if (ev.contains("started")) runners.push_back(ev["started"]["executor"]);
  }
  ASSERT_GE(runners.size(), 2u) << r.out;
  EXPECT_EQ(runners.front(), executor);
  EXPECT_NE(runners.back(), executor);
}

TEST(ServicesEndToEndTest, ApiKeysAreRequiredWhenConfigured) {
  Stack stack;
  const std::string keys = stack.model_root() + "/api-keys";
  // The key is "secret-key-1"; the file holds its SHA-256 (what `unmask keys hash` prints).
  std::ofstream(keys) << "# comment\nsha256:a6c1eaef9d5f23f4e13d9b574cbbe07ae877227d92be87d077005dc6776bcdcc e2e\n";
  const int s = stack.StartScheduler({"--api-keys-file", keys});
  CliResult r = stack.Cli(s, "jobs");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("API key"));
  r = stack.Cli(s, "--api-key wrong jobs");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  r = stack.Cli(s, "--api-key-file " + keys.substr(0, keys.size()) + ".first jobs");
  EXPECT_NE(r.exit_code, 0);
  std::ofstream(keys + ".client") << "secret-key-1\n";
  r = stack.Cli(s, "--api-key-file " + keys + ".client jobs");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

TEST(ServicesEndToEndTest, KeysHashWritesTheLineTheSchedulerReads) {
  Stack stack;
  const std::string plain = stack.model_root() + "/key.txt", keys = stack.model_root() + "/api-keys";
  std::ofstream(plain) << "my-key-1\n";
  CliResult hashed = RunCli("keys hash --name e2e --max-queued-jobs 3 < " + plain);
  ASSERT_EQ(hashed.exit_code, 0) << hashed.out;
  EXPECT_EQ(hashed.out, "sha256:022ec03cb14985ab000a416b9595b012e3c9881a2f4b90bad876a45079d209f8 e2e max_queued_jobs=3\n");
  std::ofstream(keys) << hashed.out;
  const int s = stack.StartScheduler({"--api-keys-file", keys});
  EXPECT_EQ(stack.Cli(s, "--api-key my-key-1 jobs").exit_code, 0);
  EXPECT_EQ(stack.Cli(s, "--api-key my-key-2 jobs").exit_code, 2);
  // Bad input: a bad name, a bad limit, an empty key; `keys new` makes a key and its line.
  EXPECT_EQ(RunCli("keys hash --name 'a b' < " + plain).exit_code, 2);
  EXPECT_EQ(RunCli("keys hash --requests-per-second -1 < " + plain).exit_code, 2);
  EXPECT_EQ(RunCli("keys hash < /dev/null").exit_code, 2);
  CliResult fresh = RunCli("keys new --name fresh");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.out;
  EXPECT_THAT(fresh.out, ::testing::MatchesRegex("unmask-[0-9a-f]{64}\nsha256:[0-9a-f]{64} fresh\n"));
}

TEST(ServicesEndToEndTest, ASchedulerRefusesABadKeyFileNamingTheLine) {
  Stack stack;
  const std::string keys = stack.model_root() + "/api-keys";
  std::ofstream(keys) << "# keys\nplain-key-in-the-clear\n";
  Process scheduler({SCHEDULER_BIN, "--listen", "127.0.0.1:0", "--api-keys-file", keys, "--metrics-listen", ""});
  EXPECT_EQ(scheduler.Wait(), 2);
  EXPECT_THAT(scheduler.output(), HasSubstr(keys + ": line 2: "));
}

TEST(ServicesEndToEndTest, AQueuedJobExpiresAtItsDeadline) {
  Stack stack;
  const int s = stack.StartScheduler();  // no executor: the job can only wait
  CliResult r = stack.Cli(s, "submit --model tiny-llada --prompt-ids 1,2 --gen-length 8 --block-length 8 --steps 8 --deadline 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  r = stack.Cli(s, "--timeout 30 watch " + id + " --json");
  const auto events = JsonLines(r.out);
  ASSERT_FALSE(events.empty()) << r.out;
  ASSERT_TRUE(events.back().contains("failed")) << r.out;
  EXPECT_EQ(events.back()["failed"]["code"], 4);  // DEADLINE_EXCEEDED
  EXPECT_THAT(r.out, HasSubstr("deadline"));
}

}  // namespace
}  // namespace unmask::testing
