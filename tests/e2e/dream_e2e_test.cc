// Dream served end to end (issue 30): the tiny Dream checkpoint in its Hugging Face layout, through
// the three doors (unmask-engine, the gRPC API by the `unmask` CLI, the OpenAI-compatible HTTP
// API), asked as a user would: no sampler named (a Dream model's default is dream), Dream's own
// options (alg, alg_temp, eps, temperature, top-p, top-k). Every door gives the official
// diffusion_generate's ids (tests/data/tiny-dream.golden.json); what Dream cannot do is refused
// naming the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <httplib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/e2e/cli_json.h"
#include "tests/e2e/stack.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

json GoldenCase(int index) {
  std::ifstream in(TestDataPath("tiny-dream.golden.json"));
  json c = json::parse(in)["cases"][index];
  EXPECT_EQ(c["model"], "tiny-dream");
  EXPECT_EQ(c["prompt"].size(), 1u);
  return c;
}

// The generated part of the official sequence.
std::vector<std::int64_t> Generated(const json& c) {
  const auto row = IdsOf(c["sequences"][0]);
  return {row.end() - c["max_new_tokens"].get<std::int64_t>(), row.end()};
}

std::string Num(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

// The case's options as flags (the engine's and the CLI's are named alike); no --sampler, and no
// --alg when the case's is the default (entropy).
std::string Flags(const json& c) {
  std::string f = " --prompt-ids " + IdList(c["prompt"][0]) + " --gen-length " + std::to_string(c["max_new_tokens"].get<int>()) +
                  " --steps " + std::to_string(c["steps"].get<int>()) + " --temperature " + Num(c["temperature"]) +
                  " --eps " + Num(c["eps"]) + " --seed " + std::to_string(c["seed"].get<int>());
  if (c["alg"] != "entropy") f += " --alg " + c["alg"].get<std::string>();
  if (!c["top_k"].is_null()) f += " --top-k " + std::to_string(c["top_k"].get<int>());
  if (!c["top_p"].is_null()) f += " --top-p " + Num(c["top_p"]);
  if (!c["alg_temp"].is_null()) f += " --alg-temp " + Num(c["alg_temp"]);
  return f + " --json";
}

// origin with top-p, maskgit_plus drawing positions (alg_temp), topk_margin with top-k and
// alg_temp, entropy at the model card's temperature 0.2 / top-p 0.95 (ties decide there).
constexpr int kCases[] = {3, 19, 33, 40};

class DreamEndToEndTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    stack_ = new Stack(TestDataPath("tiny-dream"), "tiny-dream");
    stack_->StartLoader();
    stack_->StartExecutor({"--precision", "fp32"});  // the golden file is float32
    scheduler_ = stack_->StartScheduler({"--http-port", "0"});
  }
  static void TearDownTestSuite() { delete stack_; }
  static Stack* stack_;
  static int scheduler_;
};
Stack* DreamEndToEndTest::stack_ = nullptr;
int DreamEndToEndTest::scheduler_ = 0;

TEST_F(DreamEndToEndTest, TheEngineGivesTheOfficialIds) {
  for (int index : kCases) {
    const json c = GoldenCase(index);
    CliResult r = RunCommand(std::string(ENGINE_BIN) + " generate --model " + TestDataPath("tiny-dream") + Flags(c) +
                             " --precision fp32");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const json out = LastLineWith(r.out, "output");
    ASSERT_FALSE(out.is_null()) << r.out;
    EXPECT_EQ(out["sampler"], "dream") << "a Dream model's default sampler";
    EXPECT_EQ(IdsOf(out["output"][0]), Generated(c)) << "case " << index;
    EXPECT_EQ(out["steps_run"], c["steps"]) << "case " << index;
  }
}

TEST_F(DreamEndToEndTest, TheGrpcApiGivesTheOfficialIdsAndSaysWhatRan) {
  for (int index : kCases) {
    const json c = GoldenCase(index);
    CliResult r = stack_->Cli(scheduler_, "generate --model tiny-dream" + Flags(c));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(CompletedIds(JsonLines(r.out)), Generated(c)) << "case " << index << r.out;
    const json params = LastLineWith(r.out, "accepted")["accepted"]["params"];
    EXPECT_EQ(params["sampler"], "dream") << params;
    EXPECT_EQ(params["alg"], c["alg"]) << params;
    EXPECT_EQ(std::stoll(params["steps"].get<std::string>()), c["steps"].get<std::int64_t>()) << params;
  }
  // Left out, the lengths are Dream's: no blocks (block_length = gen_length), steps = gen_length.
  CliResult r = stack_->Cli(scheduler_, "generate --model tiny-dream --prompt-ids 17,230,45 --gen-length 20 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json params = LastLineWith(r.out, "accepted")["accepted"]["params"];
  EXPECT_EQ(params["block_length"], "20") << params;
  EXPECT_EQ(params["steps"], "20") << params;
  EXPECT_EQ(params["alg"], "entropy") << params;
  EXPECT_EQ(CompletedIds(JsonLines(r.out)).size(), 20u) << r.out;
}

TEST_F(DreamEndToEndTest, WhatDreamCannotDoIsRefusedByName) {
  const std::string ask = "generate --model tiny-dream --prompt-ids 17,230,45 --gen-length 16 --json";
  CliResult r = stack_->Cli(scheduler_, ask + " --sampler dual_cache");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("params.sampler: the model is Dream (shifted prediction): it generates with sampler "
                               "'dream' or a Fast-dLLM Dream mode (dream_prefix_cache, dream_dual_cache, +threshold) "
                               "only, got 'dual_cache'"));
  r = stack_->Cli(scheduler_, ask + " --block-length 4");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("params.block_length: sampler 'dream' has no blocks"));
  r = stack_->Cli(scheduler_, ask + " --alg greedy");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("params.alg: 'greedy' is not one of origin, maskgit_plus, topk_margin, entropy"));
  r = stack_->Cli(scheduler_, ask + " --eps 1.5");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("params.eps: must be in (0, 1), got 1.5"));
  r = RunCommand(std::string(ENGINE_BIN) + " generate --model " + TestDataPath("tiny-dream") +
                 " --prompt-ids 1,2 --sampler reference");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--sampler: the model is Dream"));
  r = RunCommand(std::string(ENGINE_BIN) + " generate --model " + TestDataPath("tiny-dream") + " --prompt-ids 1,2 --alg-temp -1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--alg-temp: must be in [0, 100]"));
}

// Fast-dLLM's Dream modes, named: the prefix cache (topk_margin, top-p sampling) and the dual cache
// (entropy, top-k sampling) give the official Fast-dLLM sampler's ids
// (tests/data/tiny-dream.fastdllm.golden.json) through the gRPC API and the engine.
TEST_F(DreamEndToEndTest, FastdllmsDreamCacheModesGiveTheOfficialIds) {
  std::ifstream in(TestDataPath("tiny-dream.fastdllm.golden.json"));
  const json golden = json::parse(in);
  for (int index : {11, 20}) {
    const json& c = golden["cases"][index];
    ASSERT_EQ(c["model"], "tiny-dream");
    const std::string mode = c["use_cache"] == "prefix" ? "dream_prefix_cache" : "dream_dual_cache";
    std::string flags = " --sampler " + mode + " --prompt-ids " + IdList(c["prompt"][0]) + " --gen-length " +
                        std::to_string(c["max_new_tokens"].get<int>()) + " --block-length " +
                        std::to_string(c["block_size"].get<int>()) + " --steps " + std::to_string(c["steps"].get<int>()) +
                        " --temperature " + Num(c["temperature"]) + " --top-p " + Num(c["top_p"]) + " --alg " +
                        c["alg"].get<std::string>() + " --seed " + std::to_string(c["seed"].get<int>()) + " --json";
    if (!c["top_k"].is_null()) flags += " --top-k " + std::to_string(c["top_k"].get<int>());
    CliResult r = stack_->Cli(scheduler_, "generate --model tiny-dream" + flags);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(CompletedIds(JsonLines(r.out)), IdsOf(c["output"][0])) << "case " << index << r.out;
    EXPECT_EQ(LastLineWith(r.out, "accepted")["accepted"]["params"]["sampler"], mode) << r.out;
    CliResult e = RunCommand(std::string(ENGINE_BIN) + " generate --model " + TestDataPath("tiny-dream") + flags +
                             " --precision fp32");
    ASSERT_EQ(e.exit_code, 0) << e.out;
    const json out = LastLineWith(e.out, "output");
    EXPECT_EQ(IdsOf(out["output"][0]), IdsOf(c["output"][0])) << "case " << index;
    EXPECT_EQ(out["steps_run"], c["nfe"]) << "case " << index;
  }
}

// Fast-dLLM's uncached Dream sampler, named as a user names it: dream_fastdllm (its schedule over
// the whole generation; case 2: topk_margin, temperature 1, top-k 50) through gRPC and HTTP, and
// dream_fastdllm+threshold (case 8: threshold 0.5, greedy) through gRPC, give the official ids of
// tests/data/tiny-dream.fastdllm.golden.json; the reply names the mode that ran.
TEST_F(DreamEndToEndTest, FastdllmsUncachedModesGiveTheOfficialIdsThroughGrpcAndHttp) {
  std::ifstream in(TestDataPath("tiny-dream.fastdllm.golden.json"));
  const json golden = json::parse(in);
  const json& sampled = golden["cases"][2];
  const json& threshold = golden["cases"][8];
  ASSERT_EQ(sampled["alg"], "topk_margin");
  ASSERT_TRUE(sampled["use_cache"].is_null() && sampled["right_shift_logits"].get<bool>());
  ASSERT_EQ(threshold["alg"], "confidence_threshold");
  ASSERT_TRUE(threshold["use_cache"].is_null() && threshold["right_shift_logits"].get<bool>());
  const auto common = [](const json& c) {
    return " --prompt-ids " + IdList(c["prompt"][0]) + " --gen-length " + std::to_string(c["max_new_tokens"].get<int>()) +
           " --steps " + std::to_string(c["steps"].get<int>()) + " --temperature " + Num(c["temperature"]) + " --eps " +
           Num(c["eps"]) + " --seed " + std::to_string(c["seed"].get<int>()) + " --json";
  };
  CliResult r = stack_->Cli(scheduler_, "generate --model tiny-dream --sampler dream_fastdllm --alg topk_margin --top-k 50" +
                                            common(sampled));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(CompletedIds(JsonLines(r.out)), IdsOf(sampled["output"][0])) << r.out;
  EXPECT_EQ(LastLineWith(r.out, "accepted")["accepted"]["params"]["sampler"], "dream_fastdllm") << r.out;

  r = stack_->Cli(scheduler_, "generate --model tiny-dream --sampler dream_fastdllm+threshold --threshold " +
                                  Num(threshold["threshold"]) + common(threshold));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(CompletedIds(JsonLines(r.out)), IdsOf(threshold["output"][0])) << r.out;
  EXPECT_EQ(LastLineWith(r.out, "accepted")["accepted"]["params"]["sampler"], "dream_fastdllm+threshold") << r.out;

  ASSERT_EQ(std::count(sampled["output"][0].begin(), sampled["output"][0].end(), 480), 0);  // stop at EOS cuts nothing
  httplib::Client client("127.0.0.1", HttpPort(stack_->scheduler(scheduler_)));
  client.set_read_timeout(120);
  const json body = {{"model", "tiny-dream"},       {"prompt", sampled["prompt"][0]},
                     {"max_tokens", sampled["max_new_tokens"]}, {"steps", sampled["steps"]},
                     {"sampler", "dream_fastdllm"}, {"alg", "topk_margin"},
                     {"top_k", 50},                 {"temperature", sampled["temperature"]},
                     {"eps", sampled["eps"]},       {"seed", sampled["seed"]}};
  auto res = client.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200) << res->body;
  const json reply = json::parse(res->body);
  EXPECT_EQ(reply["unmask"]["params"]["sampler"], "dream_fastdllm") << res->body;
  CliResult job = stack_->Cli(scheduler_, "job " + reply["unmask"]["job_id"].get<std::string>() + " --json");
  ASSERT_EQ(job.exit_code, 0) << job.out;
  const json info = json::parse(job.out, nullptr, false);
  ASSERT_FALSE(info.is_discarded()) << job.out;
  EXPECT_EQ(IdsOf(info["result"]["ids"]), IdsOf(sampled["output"][0])) << job.out;
  // A block length on a mode without blocks: 400 naming the field.
  json bad = body;
  bad["block_length"] = 4;
  res = client.Post("/v1/completions", bad.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_EQ(json::parse(res->body)["error"]["param"], "block_length") << res->body;
}

TEST_F(DreamEndToEndTest, TheHttpApiGivesTheOfficialIds) {
  const json c = GoldenCase(41);  // entropy, temperature 0.5, top-p 0.95; no EOS, so stop at EOS cuts nothing
  ASSERT_EQ(std::count(c["sequences"][0].begin(), c["sequences"][0].end(), 480), 0);
  httplib::Client client("127.0.0.1", HttpPort(stack_->scheduler(scheduler_)));
  client.set_read_timeout(120);
  const json body = {{"model", "tiny-dream"},           {"prompt", c["prompt"][0]},
                     {"max_tokens", c["max_new_tokens"]}, {"steps", c["steps"]},
                     {"temperature", c["temperature"]}, {"top_p", c["top_p"]},
                     {"alg", c["alg"]},                 {"eps", c["eps"]},
                     {"seed", c["seed"]}};
  auto res = client.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200) << res->body;
  const json reply = json::parse(res->body);
  EXPECT_EQ(reply["unmask"]["params"]["sampler"], "dream") << res->body;
  EXPECT_EQ(reply["unmask"]["params"]["alg"], "entropy") << res->body;
  CliResult job = stack_->Cli(scheduler_, "job " + reply["unmask"]["job_id"].get<std::string>() + " --json");
  ASSERT_EQ(job.exit_code, 0) << job.out;
  const json info = json::parse(job.out, nullptr, false);
  ASSERT_FALSE(info.is_discarded()) << job.out;
  EXPECT_EQ(IdsOf(info["result"]["ids"]), Generated(c)) << job.out;
  // A bad alg: 400 naming the field, in the HTTP API's name.
  json bad = body;
  bad["alg"] = "fastest";
  res = client.Post("/v1/completions", bad.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_EQ(json::parse(res->body)["error"]["param"], "alg") << res->body;
}

// Chat in the template the checkpoint ships (Dream-v0-Instruct's <|im_start|> format, rendered by the
// Jinja interpreter) and its slow tokenizer's files, through gRPC and the OpenAI chat endpoint; the prompt's ids carry <|im_start|> (481)
// and <|im_end|> (482), and the turn ends at <|im_end|>, the model's end of turn.
TEST_F(DreamEndToEndTest, ChatUsesTheTemplateTheCheckpointShips) {
  CliResult r = stack_->Cli(scheduler_, "generate --model tiny-dream --chat 'Who are you?' --system 'Be brief.' "
                                        "--gen-length 12 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(CompletedIds(JsonLines(r.out)).size(), 12u) << r.out;
  httplib::Client client("127.0.0.1", HttpPort(stack_->scheduler(scheduler_)));
  client.set_read_timeout(120);
  const json body = {{"model", "tiny-dream"},
                     {"messages", json::array({{{"role", "user"}, {"content", "Who are you?"}}})},
                     {"max_tokens", 12}};
  auto res = client.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200) << res->body;
  const json reply = json::parse(res->body);
  EXPECT_EQ(reply["unmask"]["params"]["sampler"], "dream") << res->body;
  // The template ran with its default system turn: "<|im_start|>system\nYou are a helpful
  // assistant.<|im_end|>\n<|im_start|>user\nWho are you?<|im_end|>\n<|im_start|>assistant\n" is 33
  // tokens in the checkpoint's vocab.json + merges.txt (no tokenizer.json: Dream's published layout).
  EXPECT_EQ(reply["usage"]["prompt_tokens"].get<int>(), 33) << res->body;
}

}  // namespace
}  // namespace unmask::testing
