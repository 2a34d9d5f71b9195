// The committed trained model (models/unmask-kjv) through the real binaries, as a user meets
// it: the loader loads it, the executor serves it, and the CLI gets English back, words of its
// corpus, unmasked step by step; asked in chat form it answers and stops by itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "tests/e2e/cli_json.h"
#include "tests/e2e/stack.h"
#include "tests/fixtures/test_paths.h"
#include "tools/train/verse_corpus.h"

namespace unmask::testing {
namespace {

using nlohmann::json;

using train::Words;

// Share of the words of `text` that the corpus has (tests/data/corpus/kjv-words.txt).
double CorpusShare(const std::string& text) {
  static const std::set<std::string> corpus = [] {
    std::set<std::string> s;
    std::ifstream in(TestDataPath("corpus/kjv-words.txt"));
    for (std::string w; std::getline(in, w);) s.insert(w);
    return s;
  }();
  const auto words = Words(text);
  if (words.empty()) return 0;
  std::size_t known = 0;
  for (const auto& w : words) known += corpus.count(w);
  return static_cast<double>(known) / static_cast<double>(words.size());
}

json Completed(const std::vector<json>& events) {
  for (const auto& e : events)
    if (e.contains("completed")) return e["completed"];
  return json();
}

TEST(TrainedModelEndToEndTest, TheCommittedModelWritesWordsOfItsCorpusThroughTheServices) {
  Stack stack(UNMASK_MODELS_DIR "/unmask-kjv", "unmask-kjv");
  stack.StartLoader();
  stack.StartExecutor();
  const int s = stack.StartScheduler();

  CliResult r = stack.Cli(s, "generate --model unmask-kjv --prompt 'And God said unto Moses,' --gen-length 64"
                             " --block-length 32 --steps 64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto events = JsonLines(r.out);
  int steps = 0;
  for (const auto& e : events) steps += e.contains("step");
  EXPECT_EQ(steps, 64);
  const json done = Completed(events);
  ASSERT_FALSE(done.is_null()) << r.out;
  const std::string text = done.value("text", "");
  EXPECT_GE(Words(text).size(), 20u) << text;
  EXPECT_GE(CorpusShare(text), 0.95) << text;
  EXPECT_EQ(text.find("\xEF\xBF\xBD"), std::string::npos) << "broken UTF-8 in: " << text;

  // Chat: the template goes in, an answer comes out and ends with EOT/EOS before the length runs
  // out. Small blocks (8 tokens, semi-autoregressive): with one 32-token block the EOS padding,
  // the model's most confident prediction, would be unmasked first and close the reply at once.
  r = stack.Cli(s, "generate --model unmask-kjv --chat 'What does John 3:16 say?' --gen-length 64"
                   " --block-length 8 --steps 64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json answer = Completed(JsonLines(r.out));
  ASSERT_FALSE(answer.is_null()) << r.out;
  const std::string reply = answer.value("text", "");
  EXPECT_EQ(answer.value("finish_reason", ""), "eos") << r.out;
  // "And he said unto him, Behold, I am come. ..." (the model is small: KJV-like, not the verse)
  EXPECT_GE(Words(reply).size(), 8u) << reply;
  EXPECT_GE(CorpusShare(reply), 0.95) << reply;
  EXPECT_EQ(reply.find("<|"), std::string::npos) << reply;
}

// As the demo runs it: no --precision. The executor says at start-up which CPU, threads, BLAS
// and kernel it uses, and `unmask models` and the metrics say what the weights are stored and
// computed in, and why.
TEST(TrainedModelEndToEndTest, TheDefaultPrecisionIsChosenFromTheCpuAndSaidEverywhere) {
  Stack stack(UNMASK_MODELS_DIR "/unmask-kjv", "unmask-kjv");
  stack.StartLoader();
  const int e = stack.StartExecutor({"--precision", "auto"});
  const int s = stack.StartScheduler();
  const std::string log = stack.executor(e).output();
  EXPECT_THAT(log, ::testing::HasSubstr("compute set-up"));
  EXPECT_THAT(log, ::testing::HasSubstr("intra-op threads on"));
  EXPECT_THAT(log, ::testing::HasSubstr("cpu_flags"));
  // bf16 weights: computed in bf16 where the CPU has bf16 instructions, in fp32 elsewhere.
  const bool native_bf16 =
      log.find("avx512_bf16") != std::string::npos || log.find("amx_bf16") != std::string::npos;
  const std::string compute = native_bf16 ? "bf16" : "fp32";
  EXPECT_THAT(log, ::testing::HasSubstr("msg=computing model_id=unmask-kjv storage=bf16 compute=" + compute));
  EXPECT_THAT(log, ::testing::HasSubstr("BLAS: OpenBLAS (OpenMP)"));  // tools/setup.sh's choice

  CliResult r;
  for (int i = 0; i < 50; ++i) {
    r = stack.Cli(s, "models");
    if (r.out.find("unmask-kjv") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, ::testing::HasSubstr("unmask-kjv  storage bf16  compute " + compute));
  EXPECT_THAT(r.out, ::testing::HasSubstr("compute " + compute + ": CPU"));
  r = stack.Cli(s, "models --json");
  const json models = json::parse(r.out);
  EXPECT_EQ(models["models"][0]["compute_precision"], compute) << r.out;
  EXPECT_FALSE(models["models"][0].value("compute_reason", "").empty()) << r.out;

  r = stack.Cli(s, "generate --model unmask-kjv --chat 'What does John 3:16 say?' --gen-length 64"
                   " --block-length 8 --steps 64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json answer = Completed(JsonLines(r.out));
  ASSERT_FALSE(answer.is_null()) << r.out;
  EXPECT_GE(CorpusShare(answer.value("text", "")), 0.95) << r.out;
}

// Early stop through the real services (Redis job store): the chat answer ends in EOS inside the
// first block of 32, so with early stop on (the default) a fast sampler runs that block's steps
// only and fills the rest with EOS; off, it runs every block and gets the same ids.
TEST(TrainedModelEndToEndTest, EarlyStopOnAndOffThroughTheServices) {
  Stack stack(UNMASK_MODELS_DIR "/unmask-kjv", "unmask-kjv");
  stack.StartRedis();
  stack.StartLoader();
  stack.StartExecutor();
  const int s = stack.StartScheduler();
  // dual_cache keeps the reference's schedule: 32 steps over 2 blocks, 16 per block.
  const std::string ask = "generate --model unmask-kjv --chat 'What does John 3:16 say?' --gen-length 64"
                          " --block-length 32 --steps 32 --sampler dual_cache --json";
  struct Run {
    int steps = 0;
    json accepted, completed;
    std::string job_id;
  };
  auto run = [&](const std::string& flags) {
    CliResult r = stack.Cli(s, ask + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << "\n" << r.out;
    Run out;
    for (const auto& e : JsonLines(r.out)) {
      out.steps += e.contains("step");
      if (e.contains("accepted")) out.accepted = e["accepted"];
      if (e.contains("completed")) out.completed = e["completed"];
      if (out.job_id.empty()) out.job_id = e.value("job_id", "");
    }
    EXPECT_FALSE(out.completed.is_null()) << flags << "\n" << r.out;
    return out;
  };
  const Run by_default = run("");
  const Run on = run(" --early-stop on");
  const Run off = run(" --early-stop off");

  EXPECT_EQ(by_default.accepted["params"].value("early_stop", json()), json(true)) << by_default.accepted;
  EXPECT_EQ(on.accepted["params"].value("early_stop", json()), json(true)) << on.accepted;
  EXPECT_EQ(off.accepted["params"].value("early_stop", json()), json(false)) << off.accepted;
  EXPECT_EQ(by_default.steps, 16) << "the answer should end in EOS within the first block";
  EXPECT_EQ(on.steps, 16);
  EXPECT_EQ(off.steps, 32) << "early stop off runs every block";
  EXPECT_EQ(off.completed["ids"], on.completed["ids"]) << "the rows early stop fills are EOS either way";
  EXPECT_EQ(off.completed["ids"], by_default.completed["ids"]);
  EXPECT_EQ(off.completed.value("finish_reason", ""), "eos");

  // The job record (in Redis) shows the flag, from any command that reads it.
  CliResult job = stack.Cli(s, "job " + off.job_id + " --json");
  ASSERT_EQ(job.exit_code, 0) << job.out;
  const json info = json::parse(job.out, nullptr, false);
  ASSERT_FALSE(info.is_discarded()) << job.out;
  EXPECT_EQ(info.value("state", ""), "succeeded");
  EXPECT_EQ(info["params"].value("early_stop", json()), json(false)) << job.out;
  job = stack.Cli(s, "job " + on.job_id);
  ASSERT_EQ(job.exit_code, 0) << job.out;
  EXPECT_THAT(job.out, ::testing::HasSubstr("early_stop:  on")) << job.out;
  job = stack.Cli(s, "job " + off.job_id);
  EXPECT_THAT(job.out, ::testing::HasSubstr("early_stop:  off")) << job.out;
  CliResult jobs = stack.Cli(s, "jobs --json");
  ASSERT_EQ(jobs.exit_code, 0) << jobs.out;
  int listed = 0;
  const json listing = json::parse(jobs.out);
  for (const auto& j : listing["jobs"]) {
    if (j.value("job_id", "") != off.job_id) continue;
    ++listed;
    EXPECT_EQ(j["params"].value("early_stop", json()), json(false)) << j;
  }
  EXPECT_EQ(listed, 1) << jobs.out;

  // --no-early-stop on submit: stored with the job before it runs.
  CliResult submitted = stack.Cli(s, "submit --model unmask-kjv --prompt-ids 1,2,3 --gen-length 32 --block-length 32"
                                     " --steps 32 --sampler threshold --no-early-stop");
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  const std::string id = submitted.out.substr(0, submitted.out.find_first_of(" \n"));
  job = stack.Cli(s, "job " + id + " --json");
  ASSERT_EQ(job.exit_code, 0) << job.out;
  EXPECT_EQ(json::parse(job.out)["params"].value("early_stop", json()), json(false)) << job.out;
  EXPECT_EQ(json::parse(job.out)["params"].value("sampler", ""), "threshold") << job.out;

  // Bad values are refused by the CLI with the flag named (exit 2), before any request.
  CliResult bad = stack.Cli(s, ask + " --early-stop maybe");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_THAT(bad.out, ::testing::HasSubstr("--early-stop 'maybe' is not one of on, off"));
  bad = stack.Cli(s, ask + " --early-stop on --no-early-stop");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_THAT(bad.out, ::testing::HasSubstr("--no-early-stop contradicts --early-stop on"));
  bad = stack.Cli(s, "job");
  EXPECT_NE(bad.exit_code, 0) << bad.out;
  bad = stack.Cli(s, "job no-such-job");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_THAT(bad.out, ::testing::HasSubstr("NOT_FOUND"));
}

}  // namespace
}  // namespace unmask::testing
