// Golden vectors for the Qwen2 tokenizer.json layout (Qwen2, Qwen2.5, Dream-v0): NFC normalizer,
// Split(Qwen2 regex, Isolated) + ByteLevel(use_regex=false), byte-level BPE with "a b" merges, a
// ByteLevel decoder and Qwen2.5's added tokens. The ids come from the independent Python reference
// in tests/data/tokenizers/make_qwen2_like.py.
#include <fstream>

#include "common/tokenizer/regex.h"
#include "common/tokenizer/unicode.h"
#include "test_util.h"

namespace unmask::tokenizer::testing {
namespace {

const Tokenizer& Qwen2Like() {
  static const Tokenizer& tok = LoadShared("tokenizers/qwen2-like.tokenizer.json");
  return tok;
}

Json ReadGolden() {
  std::ifstream in(DataPath("tokenizers/qwen2-like.golden.json"));
  EXPECT_TRUE(in.good());
  return Json::parse(in);
}

std::string Nfc(std::string text) {
  EXPECT_TRUE(NormalizeUnicode(UnicodeForm::kNFC, &text).ok());
  return text;
}

std::string DecodeOrDie(const std::vector<int32_t>& ids, bool skip_special = false) {
  auto text = Qwen2Like().Decode(ids, skip_special);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

TEST(Qwen2LikeGolden, EveryCaseMatchesTheReferenceEncoderAndDecoder) {
  const Json golden = ReadGolden();
  ASSERT_GE(golden["cases"].size(), 110u);
  for (const Json& c : golden["cases"]) {
    const std::string text = c["text"];
    const bool special = c["parse_special_tokens"];
    const std::vector<int32_t> expected = c["ids"];
    const std::string decoded = c["decoded"];
    const std::vector<int32_t> ids = EncodeOrDie(Qwen2Like(), text, special);
    EXPECT_EQ(ids, expected) << "text: " << text;
    EXPECT_EQ(DecodeOrDie(expected), decoded) << "text: " << text;
    EXPECT_EQ(DecodeOrDie(ids), Nfc(text)) << "text: " << text;
    EXPECT_EQ(decoded, Nfc(text)) << "the reference's NFC and ICU's differ on: " << text;
  }
}

TEST(Qwen2LikeGolden, AddedTokensHaveQwen25AndDreamIds) {
  const std::vector<std::pair<const char*, int32_t>> special = {
      {"<|endoftext|>", 151643},     {"<|im_start|>", 151644},   {"<|im_end|>", 151645},
      {"<|object_ref_start|>", 151646}, {"<|object_ref_end|>", 151647}, {"<|box_start|>", 151648},
      {"<|box_end|>", 151649},       {"<|quad_start|>", 151650}, {"<|quad_end|>", 151651},
      {"<|vision_start|>", 151652},  {"<|vision_end|>", 151653}, {"<|vision_pad|>", 151654},
      {"<|image_pad|>", 151655},     {"<|video_pad|>", 151656},  {"<|beginoftext|>", 151665},
      {"<|mask|>", 151666}};
  for (const auto& [content, id] : special) {
    EXPECT_EQ(Qwen2Like().TokenToId(content), id) << content;
    EXPECT_TRUE(Qwen2Like().IsSpecialToken(id)) << content;
  }
  const std::vector<std::pair<const char*, int32_t>> plain = {
      {"<tool_call>", 151657},  {"</tool_call>", 151658},  {"<|fim_prefix|>", 151659}, {"<|fim_middle|>", 151660},
      {"<|fim_suffix|>", 151661}, {"<|fim_pad|>", 151662}, {"<|repo_name|>", 151663},  {"<|file_sep|>", 151664}};
  for (const auto& [content, id] : plain) {
    EXPECT_EQ(Qwen2Like().TokenToId(content), id) << content;
    EXPECT_FALSE(Qwen2Like().IsSpecialToken(id)) << content;
  }
  EXPECT_EQ(Qwen2Like().id_limit(), 151667);
  EXPECT_EQ(Qwen2Like().TokenToId("!"), 0);               // GPT-2's byte order
  EXPECT_EQ(Qwen2Like().TokenToId("\xC4\xA0"), 220);      // "Ġ", the space byte
  EXPECT_FALSE(Qwen2Like().IdToToken(151642).has_value());  // the gap below the added tokens
}

TEST(Qwen2LikeGolden, DigitsAreOneTokenEach) {
  const std::vector<int32_t> ids = EncodeOrDie(Qwen2Like(), "2024 1234567890", false);
  ASSERT_EQ(ids.size(), 15u);  // 4 digits, " " (no letter follows), 10 digits
  const std::string digits = "2024 1234567890";
  for (size_t i = 0; i < digits.size(); ++i) {
    const std::string ch = digits[i] == ' ' ? "\xC4\xA0" : std::string(1, digits[i]);
    EXPECT_EQ(ids[i], Qwen2Like().TokenToId(ch)) << i;
  }
}

TEST(Qwen2LikeGolden, SpecialTokenParsingAndSkipping) {
  // Off: special tokens are spelled out by byte-level BPE; non-special added tokens still match.
  for (int32_t id : EncodeOrDie(Qwen2Like(), "<|im_start|><|mask|>", false)) EXPECT_LT(id, 151643);
  EXPECT_EQ(EncodeOrDie(Qwen2Like(), "<tool_call></tool_call>", false), (std::vector<int32_t>{151657, 151658}));
  EXPECT_EQ(EncodeOrDie(Qwen2Like(), "<|im_start|><|mask|>", true), (std::vector<int32_t>{151644, 151666}));
  // Decoding with skip_special_tokens drops the special ones only.
  const auto ids = EncodeOrDie(Qwen2Like(), "<|im_start|>user\n<tool_call>x</tool_call><|im_end|>", true);
  EXPECT_EQ(DecodeOrDie(ids, true), "user\n<tool_call>x</tool_call>");
  EXPECT_EQ(DecodeOrDie(ids, false), "<|im_start|>user\n<tool_call>x</tool_call><|im_end|>");
}

// The fix in common/tokenizer/regex.cc: `\s` and `\S` mean Oniguruma's white space (U+0009..U+000D,
// U+0085, Zs, Zl, Zp), not PCRE2's, which also takes U+180E MONGOLIAN VOWEL SEPARATOR (via \h).
std::vector<std::string> FindAll(const std::string& pattern, const std::string& subject) {
  auto regex = Regex::Compile(pattern);
  EXPECT_TRUE(regex.ok()) << regex.status().ToString();
  std::vector<Match> matches;
  if (regex.ok()) {
    EXPECT_TRUE((*regex)->FindAll(subject, &matches).ok());
  }
  std::vector<std::string> out;
  for (const Match& m : matches) out.push_back(subject.substr(m.begin, m.end - m.begin));
  return out;
}

TEST(RegexWhiteSpace, BackslashSIsOnigurumasWhiteSpace) {
  const std::string mvs = "\xE1\xA0\x8E";  // U+180E
  const std::string nel = "\xC2\x85";      // U+0085
  const std::string nbsp = "\xC2\xA0";
  const std::string ideographic = "\xE3\x80\x80";
  // Outside a class, \s and \S.
  EXPECT_EQ(FindAll("\\s+", "a" + mvs + "b \t" + nel + nbsp + ideographic + "\x1F"),
            (std::vector<std::string>{" \t" + nel + nbsp + ideographic}));
  EXPECT_EQ(FindAll("\\S+", "a" + mvs + "b " + nel + "c"), (std::vector<std::string>{"a" + mvs + "b", "c"}));
  // Inside a class, negated or not.
  EXPECT_EQ(FindAll("[^\\s]+", "x" + mvs + " y"), (std::vector<std::string>{"x" + mvs, "y"}));
  EXPECT_EQ(FindAll("[\\sx]+", "x" + mvs + "x \xE2\x80\xA8x"), (std::vector<std::string>{"x", "x \xE2\x80\xA8x"}));
  EXPECT_EQ(FindAll("[\\Sy]+", mvs + " y"), (std::vector<std::string>{mvs, "y"}));
  // Escaped backslashes, literal "s" and \Q...\E quoting are left alone.
  EXPECT_EQ(FindAll("\\\\s", "a\\sb"), (std::vector<std::string>{"\\s"}));
  EXPECT_EQ(FindAll("[\\\\s]+", "s\\ x"), (std::vector<std::string>{"s\\"}));
  EXPECT_EQ(FindAll("\\Q\\s\\E", "\\s "), (std::vector<std::string>{"\\s"}));
  EXPECT_EQ(FindAll("[]\\s]+", "]" + mvs + " "), (std::vector<std::string>{"]", " "}));
  EXPECT_EQ(FindAll("[[:alpha:]\\s]+", "ab " + mvs), (std::vector<std::string>{"ab "}));
  // The pattern as written is what an error message shows.
  auto regex = Regex::Compile("\\s+(?!\\S)");
  ASSERT_TRUE(regex.ok());
  EXPECT_EQ((*regex)->pattern(), "\\s+(?!\\S)");
}

}  // namespace
}  // namespace unmask::tokenizer::testing
