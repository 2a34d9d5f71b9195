// LLaDA2's block diffusion served end to end (issue 29): the tiny LLaDA2 checkpoint in its Hugging
// Face layout, through the three doors (unmask-engine, the gRPC API by the `unmask` CLI, the
// OpenAI-compatible HTTP API), asked as a user would: no sampler named (an LLaDA2 model's default
// is llada2), LLaDA2's own options (threshold, top-k, top-p, minimal_topk, EOS early stop). Every
// door gives the official LLaDA2MoeModelLM.generate's ids (tests/data/tiny-llada2.golden.json);
// what LLaDA2 cannot do is refused naming the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <httplib.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/e2e/cli_json.h"
#include "tests/e2e/stack.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

json GoldenCase(int index) {
  std::ifstream in(TestDataPath("tiny-llada2.golden.json"));
  json c = json::parse(in)["cases"][index];
  EXPECT_EQ(c["model"], "tiny-llada2");
  return c;
}

// The ids up to and including the first EOS: what the official generate returns.
std::vector<std::int64_t> CutAtEos(std::vector<std::int64_t> ids, std::int64_t eos) {
  const auto it = std::find(ids.begin(), ids.end(), eos);
  if (it != ids.end()) ids.erase(it + 1, ids.end());
  return ids;
}

// The case's options as flags (the engine's and the CLI's are named alike); no --sampler.
std::string Flags(const json& c) {
  std::string f = " --prompt-ids " + IdList(c["prompt"][0]) + " --gen-length " + std::to_string(c["gen_length"].get<int>()) +
                  " --block-length " + std::to_string(c["block_length"].get<int>()) + " --steps " +
                  std::to_string(c["steps"].get<int>()) + " --threshold " + std::to_string(c["threshold"].get<double>()) +
                  " --minimal-topk " + std::to_string(c["minimal_topk"].get<int>()) + " --temperature " +
                  std::to_string(c["temperature"].get<double>()) + " --seed " + std::to_string(c["seed"].get<int>());
  if (!c["top_k"].is_null()) f += " --top-k " + std::to_string(c["top_k"].get<int>());
  if (!c["top_p"].is_null()) f += " --top-p " + std::to_string(c["top_p"].get<double>());
  if (c["eos_early_stop"].get<bool>()) f += " --eos-early-stop";
  return f + " --json";
}

constexpr int kCases[] = {3, 4, 12, 14};  // top-p sampling, minimal_topk, EOS early stop, sampled + early stop

class Llada2EndToEndTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    stack_ = new Stack(TestDataPath("tiny-llada2"), "tiny-llada2");
    stack_->StartLoader();
    stack_->StartExecutor({"--precision", "fp32"});  // the golden file is float32
    scheduler_ = stack_->StartScheduler({"--http-port", "0"});
  }
  static void TearDownTestSuite() { delete stack_; }
  static Stack* stack_;
  static int scheduler_;
};
Stack* Llada2EndToEndTest::stack_ = nullptr;
int Llada2EndToEndTest::scheduler_ = 0;

TEST_F(Llada2EndToEndTest, TheEngineGivesTheOfficialIds) {
  for (int index : kCases) {
    const json c = GoldenCase(index);
    CliResult r = RunCommand(std::string(ENGINE_BIN) + " generate --model " + TestDataPath("tiny-llada2") + Flags(c) +
                             " --precision fp32");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const json out = LastLineWith(r.out, "output");
    ASSERT_FALSE(out.is_null()) << r.out;
    EXPECT_EQ(out["sampler"], "llada2") << "an LLaDA2 model's default sampler";
    EXPECT_EQ(CutAtEos(IdsOf(out["output"][0]), c["eos_id"]), IdsOf(c["output"])) << "case " << index;
    EXPECT_EQ(out["steps_run"], c["nfe"]) << "case " << index;
  }
}

TEST_F(Llada2EndToEndTest, TheGrpcApiGivesTheOfficialIdsAndSaysWhatRan) {
  for (int index : kCases) {
    const json c = GoldenCase(index);
    CliResult r = stack_->Cli(scheduler_, "generate --model tiny-llada2" + Flags(c));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(CutAtEos(CompletedIds(JsonLines(r.out)), c["eos_id"]), IdsOf(c["output"])) << "case " << index << r.out;
    const json params = LastLineWith(r.out, "accepted")["accepted"]["params"];
    EXPECT_EQ(params["sampler"], "llada2") << params;
    EXPECT_EQ(std::stoll(params["steps"].get<std::string>()), c["steps"].get<std::int64_t>()) << "steps per block";
    EXPECT_EQ(std::stoll(params["minimal_topk"].get<std::string>()), c["minimal_topk"].get<std::int64_t>()) << params;
  }
  // Left out, the lengths and the threshold are LLaDA2's own defaults: blocks of 32, as many
  // steps per block, threshold 0.95.
  CliResult r = stack_->Cli(scheduler_, "generate --model tiny-llada2 --prompt-ids 17,230,45 --gen-length 40 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json params = LastLineWith(r.out, "accepted")["accepted"]["params"];
  EXPECT_EQ(params["block_length"], "32") << params;
  EXPECT_EQ(params["steps"], "32") << params;
  EXPECT_DOUBLE_EQ(params["threshold"].get<double>(), 0.95) << params;
  EXPECT_EQ(CompletedIds(JsonLines(r.out)).size(), 40u) << r.out;
}

TEST_F(Llada2EndToEndTest, WhatLlada2CannotDoIsRefusedByName) {
  const std::string ask = "generate --model tiny-llada2 --prompt-ids 17,230,45 --gen-length 16 --json";
  CliResult r = stack_->Cli(scheduler_, ask + " --sampler dual_cache");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("params.sampler: the model is LLaDA2 (block-causal attention): it generates with sampler "
                               "'llada2' or 'llada21' only, got 'dual_cache'"));
  r = stack_->Cli(scheduler_, ask + " --cfg-scale 1.5");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("params.cfg_scale: sampler 'llada2' has no classifier-free guidance"));
  r = stack_->Cli(scheduler_, ask + " --top-p 1.5");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("params.top_p: must be in (0, 1] (1 = off), got 1.5"));
  r = stack_->Cli(scheduler_, ask + " --minimal-topk 17");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("params.minimal_topk: must be in [1, gen_length (16)], got 17"));
  r = RunCommand(std::string(ENGINE_BIN) + " generate --model " + TestDataPath("tiny-llada2") +
                 " --prompt-ids 1,2 --sampler reference");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--sampler: the model is LLaDA2"));
  r = RunCommand(std::string(ENGINE_BIN) + " generate --model " + TestDataPath("tiny-llada2") + " --prompt-ids 1,2 --top-k -1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--top-k: must be >= 0 (0 = off), got -1"));
}

TEST_F(Llada2EndToEndTest, TheHttpApiGivesTheOfficialIds) {
  const json c = GoldenCase(3);  // top-p sampling; no EOS in its output, so stop at EOS cuts nothing
  ASSERT_EQ(std::count(c["output"].begin(), c["output"].end(), c["eos_id"]), 0);
  httplib::Client client("127.0.0.1", HttpPort(stack_->scheduler(scheduler_)));
  client.set_read_timeout(120);
  const json body = {{"model", "tiny-llada2"},          {"prompt", c["prompt"][0]},
                     {"max_tokens", c["gen_length"]},   {"block_length", c["block_length"]},
                     {"steps", c["steps"]},             {"threshold", c["threshold"]},
                     {"temperature", c["temperature"]}, {"top_p", c["top_p"]},
                     {"seed", c["seed"]}};
  auto res = client.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200) << res->body;
  const json reply = json::parse(res->body);
  EXPECT_EQ(reply["unmask"]["params"]["sampler"], "llada2") << res->body;
  EXPECT_DOUBLE_EQ(reply["unmask"]["params"]["top_p"].get<double>(), c["top_p"].get<double>()) << res->body;
  CliResult job = stack_->Cli(scheduler_, "job " + reply["unmask"]["job_id"].get<std::string>() + " --json");
  ASSERT_EQ(job.exit_code, 0) << job.out;
  const json info = json::parse(job.out, nullptr, false);
  ASSERT_FALSE(info.is_discarded()) << job.out;
  EXPECT_EQ(IdsOf(info["result"]["ids"]), IdsOf(c["output"])) << job.out;
  // A LLaDA mode on this model: 400 naming the field, in the HTTP API's name.
  const json bad = {{"model", "tiny-llada2"}, {"prompt", c["prompt"][0]}, {"sampler", "threshold"}};
  res = client.Post("/v1/completions", bad.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_EQ(json::parse(res->body)["error"]["param"], "sampler") << res->body;
}

// LLaDA2.1 (model_type llada21_moe): its default sampler is llada21, token editing, given the
// editing options through the CLI (gRPC) and the engine; the official ids (the golden file of
// tests/data/tiny-llada21.golden.json, whose outputs stop at the first EOS).
TEST(Llada21EndToEndTest, AnLlada21CheckpointEditsTokensAsTheOfficialGenerate) {
  std::ifstream in(TestDataPath("tiny-llada21.golden.json"));
  const json golden = json::parse(in);
  Stack stack(TestDataPath("tiny-llada21"), "tiny-llada21");
  stack.StartLoader();
  stack.StartExecutor({"--precision", "fp32"});
  const int s = stack.StartScheduler();
  for (int index : {1, 8, 11}) {  // many edits, sampled with edits, EOS early stop
    const json& c = golden["cases"][index];
    ASSERT_EQ(c["model"], "tiny-llada21");
    std::string flags = Flags(c) + " --editing-threshold " + std::to_string(c["editing_threshold"].get<double>()) +
                        " --max-post-steps " + std::to_string(c["max_post_steps"].get<int>()) + " --num-to-transfer " +
                        std::to_string(c["num_to_transfer"].get<int>());
    CliResult r = stack.Cli(s, "generate --model tiny-llada21" + flags);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(CutAtEos(CompletedIds(JsonLines(r.out)), c["eos_id"]), IdsOf(c["output"])) << "case " << index << r.out;
    const json params = LastLineWith(r.out, "accepted")["accepted"]["params"];
    EXPECT_EQ(params["sampler"], "llada21") << params;
    EXPECT_DOUBLE_EQ(params["editing_threshold"].get<double>(), c["editing_threshold"].get<double>()) << params;
    CliResult e = RunCommand(std::string(ENGINE_BIN) + " generate --model " + TestDataPath("tiny-llada21") + flags +
                             " --precision fp32");
    ASSERT_EQ(e.exit_code, 0) << e.out;
    const json out = LastLineWith(e.out, "output");
    EXPECT_EQ(out["sampler"], "llada21");
    EXPECT_EQ(CutAtEos(IdsOf(out["output"][0]), c["eos_id"]), IdsOf(c["output"])) << "case " << index;
  }
  // llada2 runs on it too (the same architecture); editing options with llada2 are refused.
  CliResult r = stack.Cli(s, "generate --model tiny-llada21 --prompt-ids 17,230,45 --gen-length 8 --sampler llada2 "
                             "--max-post-steps 3 --json");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("params.max_post_steps: only sampler 'llada21' (LLaDA2.1's token editing) uses it"));
  r = stack.Cli(s, "generate --model tiny-llada21 --prompt-ids 17,230,45 --gen-length 8 --sampler llada2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(CompletedIds(JsonLines(r.out)).size(), 8u);
}

// LLaDA2.1 as it may be published: model_type "llada2_moe" and the file names of LLaDA2.0
// (configuration_llada2_moe.py, modeling_llada2_moe.py), told apart by its modeling file's
// generate(), which takes editing_threshold. Served by the loader and an executor and run by the
// engine with no sampler named, it edits tokens (llada21) as the official generate does.
TEST(Llada21EndToEndTest, AnLlada21CheckpointThatSaysLlada2MoeDefaultsToTokenEditing) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("unmask-llada21-as-llada2-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(TestDataPath("tiny-llada21"), dir);
  json config = json::parse(std::ifstream(dir / "config.json"));
  config["model_type"] = "llada2_moe";
  config["auto_map"] = {{"AutoConfig", "configuration_llada2_moe.LLaDA2MoeConfig"},
                        {"AutoModel", "modeling_llada2_moe.LLaDA2MoeModel"},
                        {"AutoModelForCausalLM", "modeling_llada2_moe.LLaDA2MoeModelLM"}};
  std::ofstream(dir / "config.json") << config.dump(2);
  std::ofstream(dir / "modeling_llada2_moe.py")
      << "class LLaDA2MoeModelLM:\n    def generate(self, inputs=None, temperature=0.0, block_length=32,\n"
         "                 gen_length=2048, threshold=0.95, editing_threshold=0.9, max_post_steps=16):\n"
         "        ...\n";
  const json golden = json::parse(std::ifstream(TestDataPath("tiny-llada21.golden.json")));
  const json& c = golden["cases"][1];  // many edits
  const std::string flags = Flags(c) + " --editing-threshold " + std::to_string(c["editing_threshold"].get<double>()) +
                            " --max-post-steps " + std::to_string(c["max_post_steps"].get<int>()) +
                            " --num-to-transfer " + std::to_string(c["num_to_transfer"].get<int>());
  {
    Stack stack(dir.string(), "llada21-as-llada2");
    stack.StartLoader();
    stack.StartExecutor({"--precision", "fp32"});
    const int s = stack.StartScheduler();
    CliResult r = stack.Cli(s, "generate --model llada21-as-llada2" + flags);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(LastLineWith(r.out, "accepted")["accepted"]["params"]["sampler"], "llada21") << r.out;
    EXPECT_EQ(CutAtEos(CompletedIds(JsonLines(r.out)), c["eos_id"]), IdsOf(c["output"])) << r.out;
  }
  CliResult e = RunCommand(std::string(ENGINE_BIN) + " generate --model " + dir.string() + flags + " --precision fp32");
  ASSERT_EQ(e.exit_code, 0) << e.out;
  EXPECT_EQ(LastLineWith(e.out, "output")["sampler"], "llada21") << e.out;
  // Without the modeling file it is an LLaDA2.0 checkpoint: llada2 by default.
  fs::remove(dir / "modeling_llada2_moe.py");
  e = RunCommand(std::string(ENGINE_BIN) + " generate --model " + dir.string() +
                 " --prompt-ids 17,230,45 --gen-length 8 --precision fp32 --json");
  ASSERT_EQ(e.exit_code, 0) << e.out;
  EXPECT_EQ(LastLineWith(e.out, "output")["sampler"], "llada2") << e.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace unmask::testing
