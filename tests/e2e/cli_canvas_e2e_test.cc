// Infilling (--suffix), templates with holes (--template-file) and logprobs (--logprobs,
// --prompt-logprobs) through the `unmask` CLI against the real loader, executor and scheduler serving the trained model
// (models/unmask-kjv), as a user asks for them; and the same request through `unmask-engine`
// gives the same ids.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "tests/e2e/cli_json.h"
#include "tests/e2e/stack.h"

namespace unmask::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// A JSON record whose values the model fills (3 + 8 tokens); everything else kept byte for byte.
constexpr char kRecord[] = R"({"book": "<hole:3>", "verse": "<hole:8>"})";
const std::regex kRecordFilled(R"re(^\{"book": "([\s\S]*)", "verse": "([\s\S]*)"\}$)re");

std::string WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Proto3 JSON: int64 as strings, and fields at their default (0, empty) left out.
std::int64_t Int(const json& j, const char* key) {
  if (!j.contains(key)) return 0;
  return j[key].is_string() ? std::stoll(j[key].get<std::string>()) : j[key].get<std::int64_t>();
}
double Real(const json& j, const char* key) { return j.contains(key) ? j[key].get<double>() : 0.0; }

json Completed(const std::string& out) {
  const json line = LastLineWith(out, "completed");
  return line.is_null() ? line : line["completed"];
}

// Every entry a log-probability (<= 0) with k alternatives, most likely first, none above the top.
void ExpectLogprobs(const json& entries, std::size_t k) {
  for (const json& e : entries) {
    EXPECT_LE(Real(e, "logprob"), 1e-6) << e;
    const json top = e.value("top", json::array());
    ASSERT_EQ(top.size(), k) << e;
    double previous = 1;
    for (const json& t : top) {
      EXPECT_LE(Real(t, "logprob"), previous + 1e-9) << e;  // descending
      EXPECT_LE(Real(t, "logprob"), 1e-6) << e;
      previous = Real(t, "logprob");
    }
    if (k > 0) { EXPECT_LE(Real(e, "logprob"), Real(top[0], "logprob") + 1e-5) << e; }
  }
}

class CliCanvasEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stack_.StartLoader();
    stack_.StartExecutor({"--precision", "auto"});  // the default, as unmask-engine's
    s_ = stack_.StartScheduler();
  }
  std::string Engine(const std::string& args) const {
    return std::string(ENGINE_BIN) + " generate --model " UNMASK_MODELS_DIR "/unmask-kjv " + args;
  }

  Stack stack_{UNMASK_MODELS_DIR "/unmask-kjv", "unmask-kjv"};
  int s_ = 0;
};

TEST_F(CliCanvasEndToEndTest, ATemplateFileIsFilledKeepingItsTextAndTheEngineAgrees) {
  const std::string file = WriteFile(stack_.model_root() + "/record.txt", kRecord);
  CliResult r = stack_.Cli(s_, "generate --model unmask-kjv --prompt 'John 3:16' --template-file " + file +
                                   " --logprobs 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json done = Completed(r.out);
  ASSERT_FALSE(done.is_null()) << r.out;
  const std::string text = done.value("text", "");
  EXPECT_TRUE(std::regex_match(text, kRecordFilled)) << "the template's fixed text is not kept: " << text;
  const std::vector<std::int64_t> ids = IdsOf(done["ids"]);
  const json accepted = LastLineWith(r.out, "accepted");
  ASSERT_FALSE(accepted.is_null()) << r.out;
  EXPECT_EQ(Int(accepted["accepted"]["params"], "gen_length"), static_cast<std::int64_t>(ids.size())) << r.out;
  // The holes, and only they, have logprobs: 3 + 8 positions in order, each its token.
  const json lp = done.value("logprobs", json::array());
  ASSERT_EQ(lp.size(), 11u) << r.out;
  for (std::size_t i = 0; i < lp.size(); ++i) {
    const std::int64_t pos = Int(lp[i], "position");
    ASSERT_LT(pos, static_cast<std::int64_t>(ids.size()));
    EXPECT_EQ(Int(lp[i], "token"), ids[pos]) << lp[i];
    if (i > 0) { EXPECT_GT(pos, Int(lp[i - 1], "position")); }
  }
  ExpectLogprobs(lp, 2);

  // The engine in-process: the same ids and text.
  CliResult engine = RunCommand(Engine("--prompt 'John 3:16' --template-file " + file + " --json"));
  ASSERT_EQ(engine.exit_code, 0) << engine.out;
  const json e = LastLineWith(engine.out, "output");
  ASSERT_FALSE(e.is_null()) << engine.out;
  EXPECT_EQ(IdsOf(e["output"][0]), ids);
  EXPECT_EQ(e["text"][0], text);

  // The terminal output: the filled template on a line of its own, then one line per token.
  r = stack_.Cli(s_, "generate --model unmask-kjv --prompt 'John 3:16' --template-file " + file + " --logprobs 1 --no-live");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("\n" + text + "\n"));
  EXPECT_THAT(r.out, HasSubstr("logprobs (11 tokens"));
  std::size_t lines = 0;
  for (std::size_t at = r.out.find("\n  pos "); at != std::string::npos; at = r.out.find("\n  pos ", at + 1)) ++lines;
  EXPECT_EQ(lines, 11u) << r.out;
  EXPECT_THAT(r.out, HasSubstr("  top: "));
}

TEST_F(CliCanvasEndToEndTest, SubmittedTemplateJobsKeepTheirTemplate) {
  const std::string file = WriteFile(stack_.model_root() + "/verse.txt", "In the beginning God created <hole:4> and the earth.");
  CliResult sub = stack_.Cli(s_, "submit --model unmask-kjv --prompt 'Genesis 1:1' --template-file " + file);
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  const std::string id = sub.out.substr(0, sub.out.find_first_of(" \n"));
  CliResult watched = stack_.Cli(s_, "watch " + id + " --json");
  ASSERT_EQ(watched.exit_code, 0) << watched.out;
  const json done = Completed(watched.out);
  ASSERT_FALSE(done.is_null()) << watched.out;
  const std::string text = done.value("text", "");
  EXPECT_EQ(text.rfind("In the beginning God created ", 0), 0u) << text;
  EXPECT_THAT(text, ::testing::EndsWith(" and the earth."));
  CliResult job = stack_.Cli(s_, "job " + id);
  ASSERT_EQ(job.exit_code, 0) << job.out;
  EXPECT_THAT(job.out, HasSubstr("text:        " + text));
}

TEST_F(CliCanvasEndToEndTest, InfillingReturnsTheGapAndTheEngineAgrees) {
  const std::string ask = "--prompt 'In the beginning God created the heaven' --suffix ' and the earth.' --gen-length 4";
  CliResult r = stack_.Cli(s_, "generate --model unmask-kjv " + ask + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json done = Completed(r.out);
  ASSERT_FALSE(done.is_null()) << r.out;
  EXPECT_EQ(IdsOf(done["ids"]).size(), 4u) << r.out;
  const std::string gap = done.value("text", "");
  EXPECT_EQ(gap.find("In the beginning"), std::string::npos) << gap;
  EXPECT_EQ(gap.find("the earth."), std::string::npos) << "the suffix is not part of the output: " << gap;
  CliResult engine = RunCommand(Engine(ask + " --json"));
  ASSERT_EQ(engine.exit_code, 0) << engine.out;
  const json e = LastLineWith(engine.out, "output");
  ASSERT_FALSE(e.is_null()) << engine.out;
  EXPECT_EQ(IdsOf(e["output"][0]), IdsOf(done["ids"]));
  EXPECT_EQ(e["text"][0], gap);
}

TEST_F(CliCanvasEndToEndTest, LogprobsOfEveryTokenAndOfEveryStep) {
  CliResult r = stack_.Cli(s_, "generate --model unmask-kjv --prompt 'And God said unto Moses,' --gen-length 16"
                               " --block-length 16 --steps 16 --logprobs 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json done = Completed(r.out);
  ASSERT_FALSE(done.is_null()) << r.out;
  const std::vector<std::int64_t> ids = IdsOf(done["ids"]);
  const json lp = done.value("logprobs", json::array());
  ASSERT_EQ(lp.size(), 16u) << r.out;
  for (std::size_t i = 0; i < lp.size(); ++i) {
    EXPECT_EQ(Int(lp[i], "position"), static_cast<std::int64_t>(i));
    EXPECT_EQ(Int(lp[i], "token"), ids[i]);
  }
  ExpectLogprobs(lp, 3);
  int steps = 0;
  for (const json& ev : JsonLines(r.out)) {
    if (!ev.contains("step")) continue;
    ++steps;
    const json& st = ev["step"];
    const json positions = st["unmasked"].value("positions", json::array());
    const json step_lp = st.value("logprobs", json::array());
    ASSERT_EQ(step_lp.size(), positions.size()) << st;
    for (std::size_t i = 0; i < step_lp.size(); ++i)
      EXPECT_EQ(Int(step_lp[i], "position"), std::stoll(positions[i].get<std::string>())) << st;
    ExpectLogprobs(step_lp, 3);
  }
  EXPECT_EQ(steps, 16);
}

TEST_F(CliCanvasEndToEndTest, PromptLogprobsOfEveryPromptTokenButTheFirst) {
  const std::string base = "generate --model unmask-kjv --prompt 'And God said unto Moses,' --gen-length 8"
                           " --block-length 8 --steps 8";
  const std::string ask = base + " --prompt-logprobs 2";
  CliResult r = stack_.Cli(s_, ask + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json done = Completed(r.out);
  ASSERT_FALSE(done.is_null()) << r.out;
  const json lp = done.value("prompt_logprobs", json::array());
  ASSERT_GE(lp.size(), 4u) << r.out;
  for (std::size_t i = 0; i < lp.size(); ++i) EXPECT_EQ(Int(lp[i], "position"), static_cast<std::int64_t>(i + 1));
  ExpectLogprobs(lp, 2);
  EXPECT_FALSE(done.contains("logprobs")) << "the generated tokens' were not asked for";
  // The terminal: a header, then a line per token.
  r = stack_.Cli(s_, ask + " --no-live");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("prompt logprobs (" + std::to_string(lp.size()) + " tokens, the first has none; position in the prompt"));
  EXPECT_THAT(r.out, HasSubstr("  pos 1  id "));
  r = stack_.Cli(s_, base + " --prompt-logprobs 21");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--prompt-logprobs: must be in [0, 20], got 21"));
}

TEST_F(CliCanvasEndToEndTest, BadInputIsRefusedNamingTheFlagOrField) {
  const std::string ask = "generate --model unmask-kjv --prompt 'John 3:16'";
  const std::string root = stack_.model_root();
  CliResult r = stack_.Cli(s_, ask + " --template-file " + root + "/missing.txt");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--template-file " + root + "/missing.txt: cannot read it"));
  r = stack_.Cli(s_, ask + " --template-file " + WriteFile(root + "/none.txt", "no holes here"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--template-file " + root + "/none.txt: has no hole"));
  r = stack_.Cli(s_, ask + " --template-file " + WriteFile(root + "/zero.txt", "a <hole:0> b"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--template-file " + root + "/zero.txt: the marker at byte 2 is a hole of 0 tokens"));
  r = stack_.Cli(s_, ask + " --logprobs 21");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--logprobs: must be in [0, 20], got 21"));
  // The scheduler's refusals, with the field named.
  r = stack_.Cli(s_, ask + " --gen-length 5 --template-file " + WriteFile(root + "/t.txt", kRecord));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("gen_length"));
  r = stack_.Cli(s_, ask + " --template-file " + WriteFile(root + "/mask.txt", "a <|mdm_mask|> <hole:2>"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("field: template_text"));
}

}  // namespace
}  // namespace unmask::testing
