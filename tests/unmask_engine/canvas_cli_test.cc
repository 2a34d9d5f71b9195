// `unmask-engine generate` with --suffix, --template-file and --logprobs, the real binary run as a
// user runs it, on the committed trained model (models/unmask-kjv) and the tiny golden checkpoint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "tests/fixtures/temp_checkpoint.h"
#include "tests/fixtures/run_command.h"
#include "tests/fixtures/test_paths.h"

namespace unmask {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

using testing::CommandResult;
using testing::RunCommand;

const std::string kKjv = UNMASK_MODELS_DIR "/unmask-kjv";
const std::string kEngine = std::string(UNMASK_ENGINE_BIN) + " generate --model " + kKjv;
// A JSON record whose values the model fills (3 + 8 tokens); everything else kept byte for byte.
constexpr char kRecord[] = R"({"book": "<hole:3>", "verse": "<hole:8>"})";
const std::regex kRecordFilled(R"re(^\{"book": "([\s\S]*)", "verse": "([\s\S]*)"\}$)re");

std::string WriteFile(const testing::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.File(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Every entry a log-probability (<= 0) with k alternatives, most likely first, none above the top.
void ExpectLogprobs(const json& entries, std::size_t k) {
  for (const json& e : entries) {
    EXPECT_LE(e["logprob"].get<double>(), 1e-6) << e;
    ASSERT_EQ(e["top"].size(), k) << e;
    double previous = 1;
    for (const json& t : e["top"]) {
      EXPECT_LE(t["logprob"].get<double>(), previous + 1e-9) << e;  // descending
      EXPECT_LE(t["logprob"].get<double>(), 1e-6) << e;
      EXPECT_TRUE(t.contains("text")) << e;  // the kjv model has a tokenizer
      previous = t["logprob"].get<double>();
    }
    if (k > 0) { EXPECT_LE(e["logprob"].get<double>(), e["top"][0]["logprob"].get<double>() + 1e-5) << e; }
  }
}

TEST(UnmaskEngineCanvasTest, ATemplateKeepsItsTextByteForByteAndFillsTheHoles) {
  testing::TempDir dir;
  const std::string file = WriteFile(dir, "record.txt", kRecord);
  CommandResult r = RunCommand(kEngine + " --prompt 'John 3:16' --template-file " + file + " --logprobs 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json out = json::parse(r.out);
  const std::string text = out["text"][0];
  std::smatch m;
  ASSERT_TRUE(std::regex_match(text, m, kRecordFilled)) << "the template's fixed text is not kept: " << text;
  const std::vector<std::int64_t> ids = out["output"][0];
  // The holes, and only they, were generated: 3 + 8 positions, each with its logprob and token.
  const json& lp = out["logprobs"][0];
  ASSERT_EQ(lp.size(), 11u) << lp;
  std::vector<std::int64_t> positions;
  for (const json& e : lp) {
    positions.push_back(e["position"]);
    EXPECT_EQ(e["token"].get<std::int64_t>(), ids.at(e["position"].get<std::size_t>())) << e;
    EXPECT_TRUE(e.contains("text")) << e;
  }
  ExpectLogprobs(lp, 3);
  // Two runs of holes, of 3 and 8, in position order.
  std::vector<int> runs;
  for (std::size_t i = 0; i < positions.size(); ++i) {
    if (i > 0 && positions[i] == positions[i - 1] + 1) {
      ++runs.back();
    } else {
      runs.push_back(1);
    }
  }
  EXPECT_EQ(runs, (std::vector<int>{3, 8})) << lp;
  // gen_length was the template's length: the output is the whole template.
  EXPECT_GT(ids.size(), 11u);

  // The human output says the same: the filled template, then one line per hole's token.
  CommandResult plain = RunCommand(kEngine + " --prompt 'John 3:16' --template-file " + file + " --logprobs 2");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_THAT(plain.out, HasSubstr("row 0 text: " + text + "\n"));
  EXPECT_THAT(plain.out, HasSubstr("row 0 logprobs"));
  std::size_t lines = 0;
  for (std::size_t at = plain.out.find("\n  pos "); at != std::string::npos; at = plain.out.find("\n  pos ", at + 1))
    ++lines;
  EXPECT_EQ(lines, 11u) << plain.out;
  EXPECT_THAT(plain.out, HasSubstr("  top: "));
}

TEST(UnmaskEngineCanvasTest, ALiteralMarkerIsKeptAndOnlyTheHolesAreFilled) {
  testing::TempDir dir;
  const std::string file = WriteFile(dir, "t.txt", "<<hole:2> In the beginning God created <hole:4> and the earth.");
  CommandResult r = RunCommand(kEngine + " --prompt-ids 1 --template-file " + file + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string text = json::parse(r.out)["text"][0];
  EXPECT_EQ(text.rfind("<hole:2> In the beginning God created ", 0), 0u) << text;
  const std::string tail = " and the earth.";
  EXPECT_TRUE(text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0) << text;
}

TEST(UnmaskEngineCanvasTest, InfillingPrintsTheGapOnly) {
  CommandResult r = RunCommand(kEngine + " --prompt 'In the beginning God created the heaven' --suffix ' and the earth.'"
                                         " --gen-length 4 --logprobs 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json out = json::parse(r.out);
  ASSERT_EQ(out["output"][0].size(), 4u) << out;
  const std::string gap = out["text"][0];
  EXPECT_EQ(gap.find("In the beginning"), std::string::npos) << gap;
  EXPECT_EQ(gap.find("the earth."), std::string::npos) << "the suffix is not part of the output: " << gap;
  ASSERT_EQ(out["logprobs"][0].size(), 4u) << out;
  ExpectLogprobs(out["logprobs"][0], 1);

  // --stop-at-eos closes the gap at the first EOS: the logprobs stop with it.
  r = RunCommand(kEngine + " --prompt 'And God said, Let there be light:' --suffix ' And God saw the light.'"
                           " --gen-length 16 --block-length 8 --stop-at-eos --logprobs 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json cut = json::parse(r.out);
  EXPECT_LE(cut["output"][0].size(), 16u);
  EXPECT_EQ(cut["logprobs"][0].size(), cut["output"][0].size()) << cut;
  ExpectLogprobs(cut["logprobs"][0], 0);
}

// Asking for logprobs changes nothing in what is generated: the golden ids, batch of two included.
TEST(UnmaskEngineCanvasTest, LogprobsLeaveTheGoldenIdsAsTheyAre) {
  std::ifstream in(testing::TestDataPath("tiny-llada.golden.json"));
  const json golden = json::parse(in);
  const json& c = golden["cases"][3];  // a batch of two
  std::string cmd = std::string(UNMASK_ENGINE_BIN) + " generate --model " + testing::TestDataPath("tiny-llada");
  for (const auto& row : c["prompt"]) {
    std::string ids;
    for (const auto& id : row) ids += (ids.empty() ? "" : ",") + std::to_string(id.get<std::int64_t>());
    cmd += " --prompt-ids " + ids;
  }
  cmd += " --steps " + std::to_string(c["steps"].get<int>()) + " --gen-length " + std::to_string(c["gen_length"].get<int>()) +
         " --block-length " + std::to_string(c["block_length"].get<int>()) + " --temperature " +
         std::to_string(c["temperature"].get<double>()) + " --remasking " + c["remasking"].get<std::string>() +
         " --seed " + std::to_string(c["seed"].get<int>()) + " --precision fp32 --logprobs 2 --json";
  CommandResult r = RunCommand(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["output"], c["output"]);
  ASSERT_EQ(out["logprobs"].size(), c["output"].size());
  for (std::size_t row = 0; row < out["logprobs"].size(); ++row) {
    const json& lp = out["logprobs"][row];
    ASSERT_EQ(lp.size(), c["output"][row].size()) << "row " << row;
    for (std::size_t i = 0; i < lp.size(); ++i) {
      EXPECT_EQ(lp[i]["position"], i);
      EXPECT_EQ(lp[i]["token"], c["output"][row][i]);
      EXPECT_FALSE(lp[i].contains("text")) << "tiny-llada has no tokenizer";
    }
  }
}

TEST(UnmaskEngineCanvasTest, BadInputIsRefusedNamingTheFlag) {
  testing::TempDir dir;
  const std::string prompt = kEngine + " --prompt 'John 3:16'";
  CommandResult r = RunCommand(prompt + " --template-file " + dir.File("missing.txt"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--template-file " + dir.File("missing.txt") + ": cannot read it"));
  r = RunCommand(prompt + " --template-file " + WriteFile(dir, "none.txt", "no holes here"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--template-file " + dir.File("none.txt") + ": has no hole"));
  r = RunCommand(prompt + " --template-file " + WriteFile(dir, "empty.txt", ""));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--template-file " + dir.File("empty.txt") + ": has no hole"));
  r = RunCommand(prompt + " --template-file " + WriteFile(dir, "zero.txt", "a <hole:0> b"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--template-file " + dir.File("zero.txt") + ": the marker at byte 2 is a hole of 0 tokens"));
  r = RunCommand(prompt + " --template-file " + WriteFile(dir, "open.txt", "a <hole:3 b"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("is not closed"));
  // A template sets the length: a different --gen-length names both.
  r = RunCommand(prompt + " --gen-length 5 --template-file " + WriteFile(dir, "t.txt", kRecord));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--gen-length: 5 does not match --template-file " + dir.File("t.txt")));
  // The mask token written in a template would be a fixed mask: refused.
  r = RunCommand(prompt + " --template-file " + WriteFile(dir, "mask.txt", "a <|mdm_mask|> <hole:2>"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--template-file " + dir.File("mask.txt") + ":"));
  for (const char* k : {"21", "-1"}) {
    r = RunCommand(prompt + " --logprobs " + k);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_THAT(r.out, HasSubstr("--logprobs: must be in [0, 20]"));
    EXPECT_THAT(r.out, HasSubstr(std::string("got ") + k));
  }
  r = RunCommand(prompt + " --logprobs many");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--logprobs"));
  // Text flags need a tokenizer: tiny-llada has none.
  const std::string tiny = std::string(UNMASK_ENGINE_BIN) + " generate --model " + testing::TestDataPath("tiny-llada");
  r = RunCommand(tiny + " --prompt-ids 1,2 --suffix ' and the earth.'");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--suffix needs a tokenizer"));
  r = RunCommand(tiny + " --prompt-ids 1,2 --template-file " + dir.File("t.txt"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--template-file needs a tokenizer"));
}

}  // namespace
}  // namespace unmask
