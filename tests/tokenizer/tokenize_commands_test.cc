// The tokenize / detokenize subcommands, through their library functions and through CLI11.
#include "tools/unmask_engine/tokenize_commands.h"

#include <sstream>

#include "test_util.h"

namespace unmask::cli {
namespace {

using tokenizer::testing::DataPath;
using tokenizer::testing::Gpt2;
using tokenizer::testing::LladaLike;

TEST(TokenizeCommands, TokenizeToText) {
  EXPECT_EQ(*TokenizeToText(Gpt2(), "Hello world", false, false), "15496 995\n");
  EXPECT_EQ(*TokenizeToText(Gpt2(), "Hello world", true, false), "{\"ids\":[15496,995]}\n");
  EXPECT_EQ(*TokenizeToText(Gpt2(), "<|endoftext|>", false, true), "50256\n");
  EXPECT_EQ(*TokenizeToText(Gpt2(), "", false, false), "\n");
  EXPECT_FALSE(TokenizeToText(Gpt2(), "\xFF", false, false).ok());
}

TEST(TokenizeCommands, ParseIdsAcceptsEveryForm) {
  const std::vector<int32_t> expected = {15496, 995, 0};
  EXPECT_EQ(*ParseIds("15496 995 0"), expected);
  EXPECT_EQ(*ParseIds(" 15496,995,\n0\n"), expected);
  EXPECT_EQ(*ParseIds("15496, 995, 0"), expected);
  EXPECT_EQ(*ParseIds("[15496, 995, 0]"), expected);
  EXPECT_EQ(*ParseIds("\n{\"ids\": [15496, 995, 0]}\n"), expected);
  EXPECT_TRUE(ParseIds("").value().empty());
  EXPECT_EQ(*ParseIds("-1"), std::vector<int32_t>{-1});
  for (const char* bad : {"12 x3", "1.5", "99999999999", "[1, \"a\"]", "{\"id\": [1]}", "[1,", "-"}) {
    auto ids = ParseIds(bad);
    EXPECT_FALSE(ids.ok()) << bad;
  }
  EXPECT_NE(ParseIds("12 x3").status().message().find("'x3' at byte offset 3"), std::string::npos);
}

TEST(TokenizeCommands, DetokenizeToText) {
  EXPECT_EQ(*DetokenizeToText(Gpt2(), "15496 995", false, false), "Hello world");
  EXPECT_EQ(*DetokenizeToText(Gpt2(), "[15496, 50256]", true, false), "{\"text\":\"Hello<|endoftext|>\"}\n");
  EXPECT_EQ(*DetokenizeToText(Gpt2(), "15496,50256", false, true), "Hello");
  auto bad = DetokenizeToText(Gpt2(), "15496 60000", false, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("60000"), std::string::npos);
}

// Runs `args` through a CLI11 app with the commands registered; returns the exit code.
int RunCli(std::vector<std::string> args, const std::string& stdin_text, std::string* out, std::string* err) {
  std::istringstream in(stdin_text);
  std::ostringstream out_stream, err_stream;
  CLI::App app("unmask-engine");
  app.require_subcommand(1);
  AddTokenizeCommands(app, in, out_stream, err_stream);
  std::vector<const char*> argv = {"unmask-engine"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  int rc = 0;
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    rc = app.exit(e, out_stream, err_stream);
  }
  *out = out_stream.str();
  *err = err_stream.str();
  return rc;
}

TEST(TokenizeCommands, CliRoundTrip) {
  const std::string gpt2 = DataPath("gpt2/tokenizer.json");
  std::string out, err;
  EXPECT_EQ(RunCli({"tokenize", "--tokenizer", gpt2}, "Hello world", &out, &err), 0) << err;
  EXPECT_EQ(out, "15496 995\n");
  EXPECT_EQ(RunCli({"detokenize", "--tokenizer", gpt2, "--json"}, out, &out, &err), 0) << err;
  EXPECT_EQ(out, "{\"text\":\"Hello world\"}\n");

  const std::string llada = DataPath("tokenizers/llada-like.tokenizer.json");
  EXPECT_EQ(RunCli({"tokenize", "--tokenizer", llada, "--special", "--json"}, "<|mdm_mask|><|eot_id|>", &out, &err), 0);
  EXPECT_EQ(out, "{\"ids\":[126336,126348]}\n");
  EXPECT_EQ(RunCli({"detokenize", "--tokenizer", llada, "--skip-special"}, "72 126348 105", &out, &err), 0);
  EXPECT_EQ(out, "Hi");
}

// --jsonl: many texts and id lists through one process, one JSON line each; blank lines skipped;
// a bad line is named by its number and nothing is printed.
TEST(TokenizeCommands, JsonlTakesOneValuePerLine) {
  const std::string gpt2 = DataPath("gpt2/tokenizer.json");
  std::string out, err;
  EXPECT_EQ(RunCli({"tokenize", "--tokenizer", gpt2, "--jsonl", "--special"},
                   "\"Hello world\"\n\n\"a\\nb<|endoftext|>\"\n\"\"\n", &out, &err), 0) << err;
  EXPECT_EQ(out, "{\"ids\":[15496,995]}\n{\"ids\":[64,198,65,50256]}\n{\"ids\":[]}\n");
  EXPECT_EQ(RunCli({"detokenize", "--tokenizer", gpt2, "--jsonl"}, "[15496, 995]\n{\"ids\": [64, 198, 65]}\n[]\n", &out, &err),
            0) << err;
  EXPECT_EQ(out, "{\"text\":\"Hello world\"}\n{\"text\":\"a\\nb\"}\n{\"text\":\"\"}\n");
  EXPECT_EQ(RunCli({"tokenize", "--tokenizer", gpt2, "--jsonl"}, "\"ok\"\nplain text\n", &out, &err), 2);
  EXPECT_NE(err.find("line 2: invalid JSON"), std::string::npos) << err;
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(RunCli({"tokenize", "--tokenizer", gpt2, "--jsonl"}, "\"ok\"\n[1, 2]\n", &out, &err), 2);
  EXPECT_NE(err.find("line 2: expected a JSON string"), std::string::npos) << err;
  EXPECT_EQ(RunCli({"detokenize", "--tokenizer", gpt2, "--jsonl"}, "[1]\n\n[99999]\n", &out, &err), 2);
  EXPECT_NE(err.find("line 3: "), std::string::npos) << err;
  EXPECT_NE(err.find("99999"), std::string::npos) << err;
}

TEST(TokenizeCommands, CliErrorsExitWithCode2) {
  const std::string gpt2 = DataPath("gpt2/tokenizer.json");
  std::string out, err;
  EXPECT_EQ(RunCli({"tokenize", "--tokenizer", "/nonexistent/tokenizer.json"}, "x", &out, &err), 2);
  EXPECT_NE(err.find("/nonexistent/tokenizer.json"), std::string::npos) << err;
  EXPECT_EQ(RunCli({"tokenize", "--tokenizer", gpt2}, "bad \xC3", &out, &err), 2);
  EXPECT_NE(err.find("byte offset 4"), std::string::npos) << err;
  EXPECT_EQ(RunCli({"detokenize", "--tokenizer", gpt2}, "1 2 abc", &out, &err), 2);
  EXPECT_NE(err.find("'abc'"), std::string::npos) << err;
  EXPECT_EQ(RunCli({"detokenize", "--tokenizer", gpt2}, "99999", &out, &err), 2);
  EXPECT_NE(err.find("id 99999"), std::string::npos) << err;
  EXPECT_EQ(RunCli({"detokenize"}, "1", &out, &err), 2);
  EXPECT_NE(err.find("--tokenizer"), std::string::npos) << err;
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace unmask::cli
