// Added-token flags: special, lstrip, rstrip, single_word, normalized; longest match.
#include "test_util.h"

namespace unmask::tokenizer::testing {
namespace {

constexpr int kTok = 1000;

// ByteLevelBase plus one added token "<tok>" (id 1000) with the given flag set.
std::unique_ptr<Tokenizer> WithToken(const std::string& flag, bool value = true,
                                     const std::string& content = "<tok>", bool special = false) {
  Json json = ByteLevelBase();
  Json token = AddedTokenJson(kTok, content, special);
  if (!flag.empty()) token[flag] = value;
  json["added_tokens"].push_back(token);
  return MustLoad(json);
}

TEST(AddedTokens, PlainTokenIsSplitOutWithoutTouchingNeighbours) {
  auto tok = WithToken("");
  EXPECT_EQ(EncodeOrDie(*tok, "a <tok> b", false), Concat({Bytes("a "), {kTok}, Bytes(" b")}));
  EXPECT_EQ(EncodeOrDie(*tok, "<tok><tok>", false), (std::vector<int32_t>{kTok, kTok}));
  EXPECT_EQ(EncodeOrDie(*tok, "<to", false), Bytes("<to"));
}

TEST(AddedTokens, LstripSwallowsWhitespaceOnTheLeftOnly) {
  auto tok = WithToken("lstrip");
  EXPECT_EQ(EncodeOrDie(*tok, "a \t <tok>  b", false), Concat({Bytes("a"), {kTok}, Bytes("  b")}));
  // Without the flag the spaces stay text.
  auto plain = WithToken("lstrip", false);
  EXPECT_EQ(EncodeOrDie(*plain, "a \t <tok>  b", false), Concat({Bytes("a \t "), {kTok}, Bytes("  b")}));
}

TEST(AddedTokens, RstripSwallowsWhitespaceOnTheRightOnly) {
  auto tok = WithToken("rstrip");
  EXPECT_EQ(EncodeOrDie(*tok, "a  <tok> \n b", false), Concat({Bytes("a  "), {kTok}, Bytes("b")}));
}

TEST(AddedTokens, SingleWordMatchesOnlyOutsideWords) {
  auto tok = WithToken("single_word", true, "ab");
  EXPECT_EQ(EncodeOrDie(*tok, "ab cd", false), Concat({{kTok}, Bytes(" cd")}));
  EXPECT_EQ(EncodeOrDie(*tok, "x ab.", false), Concat({Bytes("x "), {kTok}, Bytes(".")}));
  EXPECT_EQ(EncodeOrDie(*tok, "xab", false), Bytes("xab"));
  EXPECT_EQ(EncodeOrDie(*tok, "abc", false), Bytes("abc"));
  EXPECT_EQ(EncodeOrDie(*tok, "ab_", false), Bytes("ab_"));  // '_' is a word character
  EXPECT_EQ(EncodeOrDie(*tok, "\xC3\xA9" "ab", false), Bytes("\xC3\xA9" "ab"));  // so is 'é'
  auto plain = WithToken("single_word", false, "ab");
  EXPECT_EQ(EncodeOrDie(*plain, "xabc", false), Concat({Bytes("x"), {kTok}, Bytes("c")}));
}

TEST(AddedTokens, NormalizedTokensMatchNormalizedText) {
  // With a Lowercase normalizer, a normalized token "HeLLo" is looked for as "hello" in the
  // lowercased text; a non-normalized one only matches the raw input exactly.
  Json json = ByteLevelBase();
  json["normalizer"] = {{"type", "Lowercase"}};
  Json normalized = AddedTokenJson(kTok, "HeLLo");
  normalized["normalized"] = true;
  json["added_tokens"].push_back(normalized);
  auto tok = MustLoad(json);
  EXPECT_EQ(EncodeOrDie(*tok, "say HELLO", false), Concat({Bytes("say "), {kTok}}));
  EXPECT_EQ(EncodeOrDie(*tok, "say hello", false), Concat({Bytes("say "), {kTok}}));

  json["added_tokens"][0]["normalized"] = false;
  auto raw = MustLoad(json);
  EXPECT_EQ(EncodeOrDie(*raw, "say HELLO", false), Bytes("say hello"));
  EXPECT_EQ(EncodeOrDie(*raw, "say HeLLo", false), Concat({Bytes("say "), {kTok}}));
}

TEST(AddedTokens, SpecialTokensNeedParsingOnAndCanBeSkippedInDecode) {
  Json json = ByteLevelBase();
  json["added_tokens"].push_back(AddedTokenJson(kTok, "<s>", /*special=*/true));
  json["added_tokens"].push_back(AddedTokenJson(kTok + 1, "<n>", /*special=*/false));
  auto tok = MustLoad(json);
  EXPECT_EQ(EncodeOrDie(*tok, "a<s>b<n>", true), Concat({Bytes("a"), {kTok}, Bytes("b"), {kTok + 1}}));
  // Parsing off: the special token is text, the non-special one is still split out.
  EXPECT_EQ(EncodeOrDie(*tok, "a<s>b<n>", false), Concat({Bytes("a<s>b"), {kTok + 1}}));

  const std::vector<int32_t> ids = Concat({Bytes("a"), {kTok}, Bytes("b"), {kTok + 1}});
  EXPECT_EQ(*tok->Decode(ids, false), "a<s>b<n>");
  EXPECT_EQ(*tok->Decode(ids, true), "ab<n>");  // only special tokens are skipped
  EXPECT_TRUE(tok->IsSpecialToken(kTok));
  EXPECT_FALSE(tok->IsSpecialToken(kTok + 1));
}

TEST(AddedTokens, LongestMatchWins) {
  Json json = ByteLevelBase();
  json["added_tokens"].push_back(AddedTokenJson(kTok, "<a>"));
  json["added_tokens"].push_back(AddedTokenJson(kTok + 1, "<a><b>"));
  auto tok = MustLoad(json);
  EXPECT_EQ(EncodeOrDie(*tok, "<a><b><a>", false), (std::vector<int32_t>{kTok + 1, kTok}));
  EXPECT_EQ(tok->id_limit(), kTok + 2);
}

TEST(AddedTokens, IdMustAgreeWithTheVocabulary) {
  Json json = ByteLevelBase();
  json["added_tokens"].push_back(AddedTokenJson(5, "a"));  // 'a' is 97 in the vocab
  auto tok = Tokenizer::FromJson(json.dump(), "mismatch.json");
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("added_tokens[0]"), std::string::npos) << tok.status().message();
}

}  // namespace
}  // namespace unmask::tokenizer::testing
