// A checkpoint directory's tokenizer when it ships a slow tokenizer's files instead of
// tokenizer.json (Tokenizer::FromDirectory): Dream-v0's published layout (vocab.json, merges.txt,
// added_tokens.json, special_tokens_map.json, tokenizer_config.json with tokenizer_class
// DreamTokenizer) encodes as the golden reference; the same vocabularies written both ways give the
// same ids (Qwen2's and GPT-2's); and every bad file is refused naming the file and the line or field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/tokenizer/test_util.h"

namespace unmask::tokenizer {
namespace {

using ::testing::HasSubstr;
using testing::DataPath;
using testing::Json;
namespace fs = std::filesystem;

Json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return Json::parse(in);
}

void Write(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A fresh directory per test, removed afterwards.
class SlowFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("unmask-slow-tok-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `tokenizer_json`'s model as vocab.json + merges.txt (with the "#version" line the
  // slow tokenizers write) and a tokenizer_config.json of `cls` whose added_tokens_decoder holds
  // the file's added tokens.
  void WriteSlowFiles(const Json& tokenizer_json, const std::string& cls) {
    Write(dir_ / "vocab.json", tokenizer_json["model"]["vocab"].dump());
    std::string merges = "#version: 0.2\n";
    for (const Json& m : tokenizer_json["model"]["merges"]) {
      merges += (m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>()) + "\n";
    }
    Write(dir_ / "merges.txt", merges);
    Json decoder = Json::object();
    for (const Json& t : tokenizer_json["added_tokens"]) {
      Json entry = t;
      entry.erase("id");
      decoder[std::to_string(t["id"].get<int>())] = entry;
    }
    Write(dir_ / "tokenizer_config.json", Json{{"tokenizer_class", cls}, {"added_tokens_decoder", decoder}}.dump());
  }

  std::string Error() {
    auto tok = Tokenizer::FromDirectory(dir_.string());
    EXPECT_FALSE(tok.ok());
    return tok.ok() ? "" : tok.status().ToString();
  }

  fs::path dir_;
};

TEST(SlowTokenizerFiles, DreamsPublishedLayoutEncodesAsTheGoldenReference) {
  ASSERT_FALSE(fs::exists(DataPath("tiny-dream/tokenizer.json"))) << "Dream publishes no tokenizer.json";
  EXPECT_TRUE(Tokenizer::DirectoryHasTokenizer(DataPath("tiny-dream")));
  auto tok = Tokenizer::FromDirectory(DataPath("tiny-dream"));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const Json golden = ReadJson(DataPath("tiny-dream.golden.json"));
  ASSERT_GE(golden["tokenizer"]["cases"].size(), 10u);
  for (const Json& c : golden["tokenizer"]["cases"]) {
    const std::string text = c["text"];
    auto ids = (*tok)->Encode(text, /*parse_special_tokens=*/true);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_EQ(*ids, c["ids"].get<std::vector<int32_t>>()) << text;
    // Decoding gives the text back, NFC-normalized (one case is decomposed on purpose).
    auto back = (*tok)->Decode(*ids, /*skip_special_tokens=*/false);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*(*tok)->Encode(*back, true), *ids) << text;
  }
  // Dream's two tokens past Qwen2.5's, special, at their (tiny) ids.
  EXPECT_EQ((*tok)->TokenToId("<|mask|>"), 503);
  EXPECT_EQ((*tok)->TokenToId("<|beginoftext|>"), 502);
  EXPECT_TRUE((*tok)->IsSpecialToken(503));
  EXPECT_FALSE((*tok)->IsSpecialToken(*(*tok)->TokenToId("<tool_call>"))) << "special: false in the config";
  EXPECT_EQ((*tok)->id_limit(), 504);
}

TEST_F(SlowFilesTest, Qwen2FilesGiveTheIdsOfTheSameTokenizerJson) {
  const Json qwen2 = ReadJson(DataPath("tokenizers/qwen2-like.tokenizer.json"));
  WriteSlowFiles(qwen2, "Qwen2Tokenizer");
  auto slow = Tokenizer::FromPath(dir_.string());
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  auto fast = Tokenizer::FromJson(qwen2.dump(), "qwen2-like.tokenizer.json");
  ASSERT_TRUE(fast.ok());
  const Json golden = ReadJson(DataPath("tokenizers/qwen2-like.golden.json"));
  int checked = 0;
  for (const Json& c : golden["cases"]) {
    const std::string text = c["text"];
    EXPECT_EQ(*(*slow)->Encode(text, true), *(*fast)->Encode(text, true)) << text;
    EXPECT_EQ(*(*slow)->Encode(text, false), *(*fast)->Encode(text, false)) << text;
    ++checked;
  }
  EXPECT_GT(checked, 10);
  // "Qwen2TokenizerFast" names the same tokenizer.
  WriteSlowFiles(qwen2, "Qwen2TokenizerFast");
  EXPECT_TRUE(Tokenizer::FromDirectory(dir_.string()).ok());
}

TEST_F(SlowFilesTest, Gpt2FilesGiveTheIdsOfGpt2sTokenizerJson) {
  const Json gpt2 = ReadJson(DataPath("gpt2/tokenizer.json"));
  WriteSlowFiles(gpt2, "GPT2Tokenizer");
  auto slow = Tokenizer::FromDirectory(dir_.string());
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  // Held here: a range-for over ReadJson(...)["cases"] would read the destroyed temporary (ASan).
  const Json golden = ReadJson(DataPath("gpt2/gpt2.golden.json"));
  for (const Json& c : golden["cases"]) {
    const std::string text = c["text"];
    EXPECT_EQ(*(*slow)->Encode(text, true), *testing::Gpt2().Encode(text, true)) << text;
  }
}

TEST_F(SlowFilesTest, ATokenizerJsonBesideThemWins) {
  const Json qwen2 = ReadJson(DataPath("tokenizers/qwen2-like.tokenizer.json"));
  WriteSlowFiles(qwen2, "NoSuchTokenizer");  // would be refused if read
  Write(dir_ / "tokenizer.json", qwen2.dump());
  auto tok = Tokenizer::FromDirectory(dir_.string());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_THAT((*tok)->source(), HasSubstr("tokenizer.json"));
}

TEST_F(SlowFilesTest, AddedTokensJsonIsReadWhenTheConfigHasNoDecoder) {
  const Json qwen2 = ReadJson(DataPath("tokenizers/qwen2-like.tokenizer.json"));
  WriteSlowFiles(qwen2, "Qwen2Tokenizer");
  const int base = qwen2["added_tokens"][0]["id"];
  Write(dir_ / "added_tokens.json", Json{{"<|a|>", base}, {"<|b|>", base + 1}}.dump());
  Write(dir_ / "tokenizer_config.json", Json{{"tokenizer_class", "Qwen2Tokenizer"}, {"eos_token", "<|a|>"}}.dump());
  auto tok = Tokenizer::FromDirectory(dir_.string());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->TokenToId("<|b|>"), base + 1);
  EXPECT_TRUE((*tok)->IsSpecialToken(base)) << "named by eos_token";
  EXPECT_FALSE((*tok)->IsSpecialToken(base + 1));
  EXPECT_EQ(*(*tok)->Encode("x<|b|>", true), (std::vector<int32_t>{*(*tok)->TokenToId("x"), base + 1}));
}

TEST_F(SlowFilesTest, MissingFilesAreNamed) {
  EXPECT_FALSE(Tokenizer::DirectoryHasTokenizer(dir_.string()));
  EXPECT_THAT(Error(), HasSubstr("neither tokenizer.json nor vocab.json with merges.txt"));
  Write(dir_ / "vocab.json", R"({"a": 0})");
  EXPECT_FALSE(Tokenizer::DirectoryHasTokenizer(dir_.string())) << "vocab.json alone";
  Write(dir_ / "merges.txt", "#version: 0.2\n");
  EXPECT_TRUE(Tokenizer::DirectoryHasTokenizer(dir_.string()));
  EXPECT_THAT(Error(), HasSubstr("tokenizer_config.json: missing"));
  Write(dir_ / "tokenizer_config.json", R"({"bos_token": "<s>"})");
  EXPECT_THAT(Error(), HasSubstr("tokenizer_class: missing"));
}

TEST_F(SlowFilesTest, BadFilesAreRefusedNamingTheFileAndLine) {
  const Json qwen2 = ReadJson(DataPath("tokenizers/qwen2-like.tokenizer.json"));
  WriteSlowFiles(qwen2, "LlamaTokenizer");
  std::string e = Error();
  EXPECT_THAT(e, HasSubstr("tokenizer_config.json: tokenizer_class: 'LlamaTokenizer' is not supported"));
  EXPECT_THAT(e, HasSubstr("Qwen2Tokenizer, DreamTokenizer, GPT2Tokenizer"));

  WriteSlowFiles(qwen2, "Qwen2Tokenizer");
  Write(dir_ / "tokenizer_config.json", "{not json");
  EXPECT_THAT(Error(), HasSubstr("tokenizer_config.json: invalid JSON"));
  WriteSlowFiles(qwen2, "Qwen2Tokenizer");
  Write(dir_ / "tokenizer_config.json", R"({"tokenizer_class": 7})");
  EXPECT_THAT(Error(), HasSubstr("tokenizer_class"));

  WriteSlowFiles(qwen2, "Qwen2Tokenizer");
  Write(dir_ / "vocab.json", "[1, 2]");
  EXPECT_THAT(Error(), HasSubstr("vocab.json: expected a JSON object"));
  Write(dir_ / "vocab.json", R"({"a": "zero"})");
  Write(dir_ / "merges.txt", "#version: 0.2\n");
  EXPECT_THAT(Error(), HasSubstr("model.vocab['a']: expected an id"));

  WriteSlowFiles(qwen2, "Qwen2Tokenizer");
  Write(dir_ / "merges.txt", "#version: 0.2\nĠ t\nlonely\n");
  e = Error();
  EXPECT_THAT(e, HasSubstr("merges.txt: line 3: expected two tokens separated by one space"));
  EXPECT_THAT(e, HasSubstr("lonely"));
  Write(dir_ / "merges.txt", "#version: 0.2\nĠ t\na b c\n");
  EXPECT_THAT(Error(), HasSubstr("merges.txt: line 3:"));
  Write(dir_ / "merges.txt", "Ġ t\n\nĠ zzzz\n");
  EXPECT_THAT(Error(), HasSubstr("merges.txt: line 3: 'zzzz' is not in vocab.json"));

  WriteSlowFiles(qwen2, "Qwen2Tokenizer");
  Write(dir_ / "tokenizer_config.json",
        Json{{"tokenizer_class", "Qwen2Tokenizer"}, {"added_tokens_decoder", {{"x7", {{"content", "<|x|>"}}}}}}.dump());
  EXPECT_THAT(Error(), HasSubstr("added_tokens_decoder['x7']: the key must be a token id"));
  Write(dir_ / "tokenizer_config.json",
        Json{{"tokenizer_class", "Qwen2Tokenizer"}, {"added_tokens_decoder", {{"9000", "<|x|>"}}}}.dump());
  EXPECT_THAT(Error(), HasSubstr("added_tokens_decoder['9000']: expected an object"));
  // An added token whose content the vocabulary has under another id.
  Write(dir_ / "tokenizer_config.json",
        Json{{"tokenizer_class", "Qwen2Tokenizer"}, {"added_tokens_decoder", {{"9000", {{"content", "a"}}}}}}.dump());
  EXPECT_THAT(Error(), HasSubstr("'a' has id 9000 but model.vocab gives it id"));

  WriteSlowFiles(qwen2, "Qwen2Tokenizer");
  Write(dir_ / "tokenizer_config.json", Json{{"tokenizer_class", "Qwen2Tokenizer"}}.dump());
  Write(dir_ / "added_tokens.json", R"({"<|x|>": "nine"})");
  EXPECT_THAT(Error(), HasSubstr("added_tokens.json: '<|x|>': expected a token id"));
}

}  // namespace
}  // namespace unmask::tokenizer
