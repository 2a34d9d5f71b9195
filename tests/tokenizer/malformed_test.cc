// Malformed tokenizer.json files are refused with a message naming the file and the problem.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "common/util/remove_tree.h"

namespace unmask::tokenizer::testing {
namespace {

namespace fs = std::filesystem;

class MalformedFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("unmask_tokenizer_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { unmask::util::RemoveTree(dir_); }

  // Writes `contents` to <tmp>/<name>, loads it, expects failure; returns the status.
  Status LoadBad(const std::string& name, const std::string& contents) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << contents;
    auto tok = Tokenizer::FromFile(path);
    EXPECT_FALSE(tok.ok()) << name << " was accepted";
    if (tok.ok()) return OkStatus();
    EXPECT_NE(tok.status().message().find(path), std::string::npos) << "no file name in: " << tok.status().message();
    return tok.status();
  }

  // Loads ByteLevelBase() with `edit` applied, expecting failure with `expected` in the message.
  void ExpectRefused(const std::string& name, const std::function<void(Json&)>& edit, const std::string& expected,
                     StatusCode code = StatusCode::kInvalidArgument) {
    Json json = ByteLevelBase();
    edit(json);
    const Status s = LoadBad(name, json.dump());
    EXPECT_EQ(s.code(), code) << s.ToString();
    EXPECT_NE(s.message().find(expected), std::string::npos) << name << ": " << s.message();
  }

  fs::path dir_;
};

TEST_F(MalformedFile, ValidBaseLoads) {
  const std::string path = (dir_ / "good.json").string();
  std::ofstream(path) << ByteLevelBase().dump();
  EXPECT_TRUE(Tokenizer::FromFile(path).ok());
}

TEST_F(MalformedFile, MissingFile) {
  auto tok = Tokenizer::FromFile((dir_ / "absent.json").string());
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kNotFound);
  EXPECT_NE(tok.status().message().find("absent.json"), std::string::npos);
}

TEST_F(MalformedFile, BadJson) {
  const Status s = LoadBad("bad.json", "{\"model\": {\"type\": \"BPE\",");
  EXPECT_NE(s.message().find("invalid JSON"), std::string::npos) << s.message();
  EXPECT_NE(LoadBad("array.json", "[1, 2]").message().find("JSON object"), std::string::npos);
}

TEST_F(MalformedFile, MissingModel) {
  ExpectRefused("no_model.json", [](Json& j) { j.erase("model"); }, "missing \"model\"");
}

TEST_F(MalformedFile, UnknownModelType) {
  ExpectRefused("model_type.json", [](Json& j) { j["model"]["type"] = "Magic"; }, "unknown model type 'Magic'");
  ExpectRefused("unigram.json", [](Json& j) { j["model"]["type"] = "Unigram"; }, "'Unigram' is not supported",
                StatusCode::kUnimplemented);
}

TEST_F(MalformedFile, MergesNamingUnknownTokens) {
  ExpectRefused("merge_left.json",
                [](Json& j) {
                  j["model"]["vocab"]["ab"] = 300;
                  j["model"]["merges"] = {"a b", "zz b"};
                },
                "model.merges[1] ('zz' 'b'): 'zz' is not in the vocabulary");
  ExpectRefused("merge_pair.json", [](Json& j) { j["model"]["merges"] = Json::array({Json::array({"a", "yy"})}); },
                "model.merges[0] ('a' 'yy'): 'yy' is not in the vocabulary");
  ExpectRefused("merge_result.json", [](Json& j) { j["model"]["merges"] = {"a b"}; },
                "the merged token 'ab' is not in the vocabulary");
  ExpectRefused("merge_form.json", [](Json& j) { j["model"]["merges"] = {"ab"}; }, "model.merges[0]");
}

TEST_F(MalformedFile, BadVocab) {
  ExpectRefused("vocab_id.json", [](Json& j) { j["model"]["vocab"]["x"] = "seven"; }, "model.vocab['x']");
  ExpectRefused("unk.json", [](Json& j) { j["model"]["unk_token"] = "<unk>"; }, "unk_token '<unk>'");
}

TEST_F(MalformedFile, UnknownNormalizerType) {
  ExpectRefused("normalizer.json", [](Json& j) { j["normalizer"] = {{"type", "Shout"}}; },
                "normalizer: unknown normalizer type 'Shout'");
  ExpectRefused("normalizer_seq.json",
                [](Json& j) { j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "?"}}}}}; },
                "normalizer.normalizers[1]: unknown normalizer type '?'");
}

TEST_F(MalformedFile, UnknownPreTokenizerType) {
  ExpectRefused("pretok.json", [](Json& j) { j["pre_tokenizer"] = {{"type", "Chop"}}; },
                "pre_tokenizer: unknown pre-tokenizer type 'Chop'");
  ExpectRefused("behavior.json",
                [](Json& j) {
                  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Sideways"}};
                },
                "unknown split behavior 'Sideways'");
}

TEST_F(MalformedFile, BadRegex) {
  ExpectRefused("regex.json",
                [](Json& j) {
                  j["pre_tokenizer"] = {{"type", "Sequence"},
                                        {"pretokenizers",
                                         {{{"type", "Split"},
                                           {"pattern", {{"Regex", "(unclosed"}}},
                                           {"behavior", "Isolated"},
                                           {"invert", false}}}}};
                },
                "pre_tokenizer.pretokenizers[0].pattern: bad regex '(unclosed'");
}

TEST_F(MalformedFile, UnknownDecoderAndBadAddedTokens) {
  ExpectRefused("decoder.json", [](Json& j) { j["decoder"] = {{"type", "Reverse"}}; }, "unknown decoder type 'Reverse'");
  ExpectRefused("added_id.json", [](Json& j) { j["added_tokens"] = {{{"content", "<x>"}}}; }, "added_tokens[0].id");
  ExpectRefused("added_flag.json",
                [](Json& j) {
                  Json t = AddedTokenJson(500, "<x>");
                  t["lstrip"] = "yes";
                  j["added_tokens"] = {t};
                },
                "added_tokens[0].lstrip: expected true or false");
}

}  // namespace
}  // namespace unmask::tokenizer::testing
