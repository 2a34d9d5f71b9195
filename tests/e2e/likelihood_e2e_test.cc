// The Monte Carlo likelihood through the real loader, executor and scheduler, asked with the
// `unmask` CLI as a user would, on the tiny checkpoints of tests/data, against the values of the
// official evaluation code (tests/data/likelihood.golden.json, tools/golden/make_likelihood_golden.py):
// LLaDA-MoE with guidance and the greedy check, Dream's estimator (its shifted prediction) from
// the loader's segment, computed in float32 as the golden file was; LLaDA2 refuses by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "tests/e2e/cli_json.h"
#include "tests/e2e/stack.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

json GoldenCase(const std::string& model, double cfg) {
  std::ifstream in(TestDataPath("likelihood.golden.json"));
  const json golden = json::parse(in);
  for (const json& c : golden["cases"])
    if (c["model"] == model && c["cfg_scale"].get<double>() == cfg) return c;
  ADD_FAILURE() << "no golden case for " << model;
  return json();
}

std::string IdList(const json& c) {
  std::string out;
  for (const char* part : {"context", "continuation"})
    for (const auto& id : c[part]) out += (out.empty() ? "" : ",") + std::to_string(id.get<std::int64_t>());
  return out;
}

// The estimate the services give for a golden case, asked by ids with the continuation's count.
json Estimate(Stack& stack, int scheduler, const std::string& model, const json& c) {
  const std::string ask = "generate --model " + model + " --prompt-ids " + IdList(c) + " --continuation-tokens " +
                          std::to_string(c["continuation"].size()) + " --mc-num " + std::to_string(c["mc_num"].get<int>()) +
                          " --mc-batch-size " + std::to_string(c["batch_size"].get<int>()) + " --seed " +
                          std::to_string(c["seed"].get<int>()) + " --cfg-scale " + std::to_string(c["cfg_scale"].get<double>()) +
                          (c.contains("greedy") ? " --check-greedy" : "") + " --json";
  CliResult r = stack.Cli(scheduler, ask);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const json completed = LastLineWith(r.out, "completed");
  EXPECT_FALSE(completed.is_null()) << r.out;
  return completed.is_null() ? json() : completed["completed"]["likelihood"];
}

void ExpectGolden(const json& got, const json& c) {
  ASSERT_FALSE(got.is_null());
  const double want = c["loglikelihood"];
  EXPECT_NEAR(got["loglikelihood"].get<double>(), want, 1e-4 * std::max(1.0, std::abs(want))) << got;
  EXPECT_EQ(std::stoll(got["samples"].get<std::string>()), c["mc_num"].get<std::int64_t>());
  if (c.contains("greedy")) EXPECT_EQ(got.value("greedy", false), c["greedy"].get<bool>()) << got;
  // The scheduler planned a draw's samples into one forward (the tiny model fits): the official
  // value all the same, in mc_num / batch_size forwards (and the greedy check's, one a token).
  EXPECT_EQ(got["rows_per_forward"].get<int>(), c["batch_size"].get<int>()) << got;
  const std::int64_t draws = c["mc_num"].get<std::int64_t>() / c["batch_size"].get<std::int64_t>();
  const std::int64_t forwards = std::stoll(got["forwards"].get<std::string>());
  EXPECT_GE(forwards, draws) << got;
  EXPECT_LE(forwards, draws + (c.contains("greedy") ? static_cast<std::int64_t>(c["continuation"].size()) : 0)) << got;
}

TEST(LikelihoodEndToEndTest, LladaMoeGivesTheOfficialEstimateWithGuidanceAndTheGreedyCheck) {
  Stack stack(TestDataPath("tiny-llada-moe"), "tiny-llada-moe");
  stack.StartLoader();
  stack.StartExecutor({"--precision", "fp32"});
  const int s = stack.StartScheduler();
  for (double cfg : {0.0, 0.5}) {
    SCOPED_TRACE("cfg " + std::to_string(cfg));
    const json c = GoldenCase("tiny-llada-moe", cfg);
    ExpectGolden(Estimate(stack, s, "tiny-llada-moe", c), c);
  }
}

TEST(LikelihoodEndToEndTest, DreamGivesItsOfficialEstimateAndRefusesTheGreedyCheck) {
  Stack stack(TestDataPath("tiny-dream"), "tiny-dream");
  stack.StartLoader();
  stack.StartExecutor({"--precision", "fp32"});
  const int s = stack.StartScheduler();
  const json c = GoldenCase("tiny-dream", 0.0);
  ExpectGolden(Estimate(stack, s, "tiny-dream", c), c);
  CliResult r = stack.Cli(s, "generate --model tiny-dream --prompt-ids " + IdList(c) +
                                 " --continuation-tokens 2 --mc-num 4 --mc-batch-size 2 --check-greedy --json");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("params.likelihood.check_greedy")) << r.out;
}

TEST(LikelihoodEndToEndTest, Llada2RefusesNamingTheField) {
  Stack stack(TestDataPath("tiny-llada2"), "tiny-llada2");
  stack.StartLoader();
  stack.StartExecutor();
  const int s = stack.StartScheduler();
  CliResult r = stack.Cli(s, "generate --model tiny-llada2 --prompt-ids 17,230,45,301 --continuation-tokens 2 --json");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("params.likelihood")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("LLaDA2")) << r.out;
}

}  // namespace
}  // namespace unmask::testing
