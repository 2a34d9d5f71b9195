// One request, three doors: the same generation asked with no block_length and no steps through
// `unmask-engine generate` (the engine in-process), the gRPC API (the `unmask` CLI against the
// real scheduler, executor and loader) and the OpenAI-compatible HTTP API gives the same ids and
// text, because every door fills the parameters from the one generation library's defaults; and
// the same prompt log-probabilities.
// On the trained model (models/unmask-kjv), as a user would ask it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/e2e/cli_json.h"
#include "tests/e2e/stack.h"

namespace unmask::testing {
namespace {

using nlohmann::json;

constexpr char kPrompt[] = "And God said unto Moses,";
constexpr int kGenLength = 48;  // not a multiple of 32: the default block_length is 24

TEST(ThreeDoorsEndToEndTest, TheSameRequestGivesTheSameIdsThroughEngineGrpcAndHttp) {
  Stack stack(UNMASK_MODELS_DIR "/unmask-kjv", "unmask-kjv");
  stack.StartLoader();
  stack.StartExecutor({"--precision", "auto"});  // the default, as unmask-engine's
  const int s = stack.StartScheduler({"--http-port", "0"});
  const int http_port = HttpPort(stack.scheduler(s));
  ASSERT_GT(http_port, 0) << stack.scheduler(s).output();

  // 1. The engine in-process.
  CliResult engine = RunCommand(std::string(ENGINE_BIN) + " generate --model " UNMASK_MODELS_DIR "/unmask-kjv" +
                                " --prompt '" + kPrompt + "' --gen-length " + std::to_string(kGenLength) +
                                " --stop-at-eos --json");
  ASSERT_EQ(engine.exit_code, 0) << engine.out;
  const json e = LastLineWith(engine.out, "output");
  ASSERT_FALSE(e.is_null()) << engine.out;
  const std::vector<std::int64_t> engine_ids = IdsOf(e["output"][0]);
  const std::string engine_text = e["text"][0];
  EXPECT_EQ(e["steps_run"], kGenLength) << "steps defaults to gen_length";
  ASSERT_FALSE(engine_ids.empty());

  // 2. The gRPC API.
  CliResult grpc = stack.Cli(s, std::string("generate --model unmask-kjv --prompt '") + kPrompt + "' --gen-length " +
                                    std::to_string(kGenLength) + " --stop-at-eos --json");
  ASSERT_EQ(grpc.exit_code, 0) << grpc.out;
  const json accepted = LastLineWith(grpc.out, "accepted");
  ASSERT_FALSE(accepted.is_null()) << grpc.out;
  const json params = accepted["accepted"]["params"];
  EXPECT_EQ(std::stoll(params["block_length"].get<std::string>()), 24) << params;
  EXPECT_EQ(std::stoll(params["steps"].get<std::string>()), kGenLength) << params;
  const json completed = LastLineWith(grpc.out, "completed");
  ASSERT_FALSE(completed.is_null()) << grpc.out;
  EXPECT_EQ(IdsOf(completed["completed"]["ids"]), engine_ids);
  EXPECT_EQ(completed["completed"]["text"], engine_text);

  // 3. The HTTP API (OpenAI completions; its text ends at EOS as --stop-at-eos does).
  httplib::Client client("127.0.0.1", http_port);
  client.set_read_timeout(120);
  const json body = {{"model", "unmask-kjv"}, {"prompt", kPrompt}, {"max_tokens", kGenLength}};
  auto res = client.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200) << res->body;
  const json reply = json::parse(res->body);
  EXPECT_EQ(reply["choices"][0]["text"], engine_text) << res->body;
  EXPECT_EQ(reply["unmask"]["params"]["block_length"], 24) << res->body;
  EXPECT_EQ(reply["unmask"]["params"]["steps"], kGenLength) << res->body;
  // And its ids: the job the HTTP request ran, read back through the gRPC API.
  CliResult job = stack.Cli(s, "job " + reply["unmask"]["job_id"].get<std::string>() + " --json");
  ASSERT_EQ(job.exit_code, 0) << job.out;
  const json info = json::parse(job.out, nullptr, false);
  ASSERT_FALSE(info.is_discarded()) << job.out;
  EXPECT_EQ(IdsOf(info["result"]["ids"]), engine_ids) << job.out;
}

// The prompt's log-probabilities through the three doors: the engine's --prompt-logprobs, the
// gRPC API's Completed.prompt_logprobs and the HTTP API's echo with logprobs give the same values.
TEST(ThreeDoorsEndToEndTest, ThePromptsLogprobsAreTheSameThroughEngineGrpcAndHttp) {
  Stack stack(UNMASK_MODELS_DIR "/unmask-kjv", "unmask-kjv");
  stack.StartLoader();
  stack.StartExecutor({"--precision", "auto"});
  const int s = stack.StartScheduler({"--http-port", "0"});
  const int http_port = HttpPort(stack.scheduler(s));
  ASSERT_GT(http_port, 0) << stack.scheduler(s).output();
  const std::string ask = std::string(" --prompt '") + kPrompt + "' --gen-length 8 --prompt-logprobs 2 --json";

  CliResult engine = RunCommand(std::string(ENGINE_BIN) + " generate --model " UNMASK_MODELS_DIR "/unmask-kjv" + ask);
  ASSERT_EQ(engine.exit_code, 0) << engine.out;
  const json e = LastLineWith(engine.out, "prompt_logprobs");
  ASSERT_FALSE(e.is_null()) << engine.out;
  const json engine_lp = e["prompt_logprobs"][0];
  ASSERT_GE(engine_lp.size(), 4u) << engine.out;

  CliResult grpc = stack.Cli(s, "generate --model unmask-kjv" + ask);
  ASSERT_EQ(grpc.exit_code, 0) << grpc.out;
  const json completed = LastLineWith(grpc.out, "completed");
  ASSERT_FALSE(completed.is_null()) << grpc.out;
  const json grpc_lp = completed["completed"]["prompt_logprobs"];
  ASSERT_EQ(grpc_lp.size(), engine_lp.size()) << grpc.out;

  httplib::Client client("127.0.0.1", http_port);
  client.set_read_timeout(120);
  const json body = {{"model", "unmask-kjv"}, {"prompt", kPrompt}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 2}};
  auto res = client.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200) << res->body;
  const json http_lp = json::parse(res->body)["choices"][0]["logprobs"];
  ASSERT_EQ(http_lp["token_logprobs"].size(), engine_lp.size() + 1) << res->body;
  EXPECT_TRUE(http_lp["token_logprobs"][0].is_null());
  for (std::size_t i = 0; i < engine_lp.size(); ++i) {
    EXPECT_EQ(engine_lp[i]["position"].get<std::int64_t>(), static_cast<std::int64_t>(i + 1));
    const double want = engine_lp[i]["logprob"].get<double>();
    EXPECT_NEAR(grpc_lp[i]["logprob"].get<double>(), want, 1e-6) << i;
    EXPECT_NEAR(http_lp["token_logprobs"][i + 1].get<double>(), want, 1e-6) << i;
    EXPECT_EQ(engine_lp[i]["top"].size(), 2u);
  }
}

// The likelihood of a continuation through the three doors: the engine's --continuation, the
// gRPC API's Completed.likelihood (the `unmask` CLI) and the HTTP API's likelihood extension give
// the same estimate for the same seed, and the same greedy answer.
TEST(ThreeDoorsEndToEndTest, TheLikelihoodIsTheSameThroughEngineGrpcAndHttp) {
  Stack stack(UNMASK_MODELS_DIR "/unmask-kjv", "unmask-kjv");
  stack.StartLoader();
  stack.StartExecutor({"--precision", "auto"});
  const int s = stack.StartScheduler({"--http-port", "0"});
  const int http_port = HttpPort(stack.scheduler(s));
  ASSERT_GT(http_port, 0) << stack.scheduler(s).output();
  constexpr char kContext[] = "In the beginning God created the heaven ";  // its space moves to the continuation
  constexpr char kContinuation[] = "and the earth.";
  const std::string ask = std::string(" --prompt '") + kContext + "' --continuation '" + kContinuation +
                          "' --mc-num 16 --mc-batch-size 8 --check-greedy --seed 5 --json";

  CliResult engine = RunCommand(std::string(ENGINE_BIN) + " generate --model " UNMASK_MODELS_DIR "/unmask-kjv" + ask);
  ASSERT_EQ(engine.exit_code, 0) << engine.out;
  const json e = LastLineWith(engine.out, "likelihood");
  ASSERT_FALSE(e.is_null()) << engine.out;
  const double want = e["likelihood"]["loglikelihood"];
  EXPECT_LT(want, 0);
  EXPECT_EQ(e["likelihood"]["samples"], 16);

  CliResult grpc = stack.Cli(s, "generate --model unmask-kjv" + ask);
  ASSERT_EQ(grpc.exit_code, 0) << grpc.out;
  const json completed = LastLineWith(grpc.out, "completed");
  ASSERT_FALSE(completed.is_null()) << grpc.out;
  const json l = completed["completed"]["likelihood"];
  EXPECT_NEAR(l["loglikelihood"].get<double>(), want, 1e-6) << grpc.out;
  EXPECT_EQ(l.value("greedy", false), e["likelihood"]["greedy"].get<bool>());
  EXPECT_EQ(std::stoll(l["continuation_tokens"].get<std::string>()), e["likelihood"]["continuation_tokens"].get<std::int64_t>());
  EXPECT_FALSE(completed["completed"].contains("ids")) << "nothing generated";
  EXPECT_EQ(LastLineWith(grpc.out, "step"), json()) << "a likelihood job has no steps";

  httplib::Client client("127.0.0.1", http_port);
  client.set_read_timeout(120);
  const json body = {{"model", "unmask-kjv"},
                     {"prompt", kContext},
                     {"seed", 5},
                     {"likelihood", {{"continuation", kContinuation}, {"mc_num", 16}, {"batch_size", 8}, {"check_greedy", true}}}};
  auto res = client.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200) << res->body;
  const json reply = json::parse(res->body);
  const json h = reply["choices"][0]["likelihood"];
  EXPECT_NEAR(h["loglikelihood"].get<double>(), want, 1e-6) << res->body;
  EXPECT_NEAR(h["standard_error"].get<double>(), e["likelihood"]["standard_error"].get<double>(), 1e-6);
  EXPECT_EQ(h["is_greedy"], e["likelihood"]["greedy"]);
  EXPECT_EQ(reply["usage"]["prompt_tokens"].get<std::size_t>(), e["prompt_ids"].size());
  EXPECT_EQ(reply["choices"][0]["text"], "");
  // The stored job, read back as a person would.
  CliResult job = stack.Cli(s, "job " + reply["unmask"]["job_id"].get<std::string>());
  ASSERT_EQ(job.exit_code, 0) << job.out;
  EXPECT_NE(job.out.find("loglikelihood -"), std::string::npos) << job.out;
  EXPECT_NE(job.out.find("over 16 samples"), std::string::npos) << job.out;
}

}  // namespace
}  // namespace unmask::testing
