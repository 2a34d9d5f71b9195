// Normalizers, pre-tokenizers (Split behaviours, Digits, ...), BPE options and decoders, both
// directly and through tokenizer.json.
#include "common/tokenizer/decoders.h"
#include "common/tokenizer/normalizers.h"
#include "common/tokenizer/pre_tokenizers.h"
#include "common/tokenizer/utf8.h"
#include "test_util.h"

namespace unmask::tokenizer::testing {
namespace {

using Strings = std::vector<std::string>;

std::string Normalized(const Normalizer& n, std::string text) {
  const Status s = n.Normalize(&text);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return text;
}

Strings Pieces(const PreTokenizer& p, const std::string& text, bool at_start = true) {
  std::vector<Piece> pieces{{text, at_start}};
  const Status s = p.PreTokenize(&pieces);
  EXPECT_TRUE(s.ok()) << s.ToString();
  Strings out;
  for (const Piece& piece : pieces) out.push_back(piece.text);
  return out;
}

Strings Decoded(const Decoder& d, Strings tokens) {
  const Status s = d.DecodeChain(&tokens, DecodeOutput::kText);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return tokens;
}

Pattern RegexPattern(const std::string& re) {
  auto compiled = Regex::Compile(re);
  EXPECT_TRUE(compiled.ok()) << compiled.status().ToString();
  return Pattern::FromRegex(*compiled);
}

TEST(Normalizers, UnicodeForms) {
  EXPECT_EQ(Normalized(*NewUnicodeNormalizer(UnicodeForm::kNFC), "e\xCC\x81"), "\xC3\xA9");
  EXPECT_EQ(Normalized(*NewUnicodeNormalizer(UnicodeForm::kNFD), "\xC3\xA9"), "e\xCC\x81");
  // Compatibility forms also fold the "fi" ligature and the circled digit.
  EXPECT_EQ(Normalized(*NewUnicodeNormalizer(UnicodeForm::kNFKC), "\xEF\xAC\x81 \xE2\x91\xA0 e\xCC\x81"), "fi 1 \xC3\xA9");
  EXPECT_EQ(Normalized(*NewUnicodeNormalizer(UnicodeForm::kNFKD), "\xEF\xAC\x81\xC3\xA9"), "fie\xCC\x81");
  EXPECT_EQ(Normalized(*NewUnicodeNormalizer(UnicodeForm::kNFC), "\xEF\xAC\x81"), "\xEF\xAC\x81");
}

TEST(Normalizers, LowercaseStripReplacePrepend) {
  EXPECT_EQ(Normalized(*NewLowercaseNormalizer(), "\xC3\x80" "BC \xCE\xA3\xCE\x91\xCE\xA3"), "\xC3\xA0" "bc \xCF\x83\xCE\xB1\xCF\x82");
  EXPECT_EQ(Normalized(*NewStripNormalizer(true, true), " \t\xC2\xA0 a b \n"), "a b");
  EXPECT_EQ(Normalized(*NewStripNormalizer(true, false), "  a  "), "a  ");
  EXPECT_EQ(Normalized(*NewStripNormalizer(false, true), "  a  "), "  a");
  EXPECT_EQ(Normalized(*NewReplaceNormalizer(Pattern::Literal(" "), "\xE2\x96\x81"), "a b  c"),
            "a\xE2\x96\x81" "b\xE2\x96\x81\xE2\x96\x81" "c");
  EXPECT_EQ(Normalized(*NewReplaceNormalizer(RegexPattern(R"(\s+)"), " "), "a \t\n b"), "a b");
  EXPECT_EQ(Normalized(*NewPrependNormalizer("\xE2\x96\x81"), "abc"), "\xE2\x96\x81" "abc");
  EXPECT_EQ(Normalized(*NewPrependNormalizer("\xE2\x96\x81"), ""), "");
  std::vector<std::unique_ptr<Normalizer>> seq;
  seq.push_back(NewUnicodeNormalizer(UnicodeForm::kNFD));
  seq.push_back(NewStripAccentsNormalizer());
  seq.push_back(NewLowercaseNormalizer());
  EXPECT_EQ(Normalized(*NewSequenceNormalizer(std::move(seq)), "Caf\xC3\xA9 \xC3\x9C" "ber"), "cafe uber");
}

TEST(Normalizers, ThroughTokenizerJson) {
  Json json = ByteLevelBase();
  json["normalizer"] = {{"type", "Sequence"},
                        {"normalizers",
                         {{{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}},
                          {{"type", "NFKC"}},
                          {{"type", "Lowercase"}},
                          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "_"}}}}};
  auto tok = MustLoad(json);
  EXPECT_EQ(EncodeOrDie(*tok, "  \xC3\x89" "COLE \xEF\xAC\x81ne ", false), Bytes("\xC3\xA9" "cole_fine"));
  for (const char* type : {"NFC", "NFD", "NFKD", "StripAccents"}) {
    json["normalizer"] = {{"type", type}};
    EXPECT_NE(MustLoad(json), nullptr) << type;
  }
}

TEST(SplitPreTokenizer, EveryBehaviorOnTheTokenizersDocExample) {
  // The example of tokenizers' SplitDelimiterBehavior documentation.
  const std::string text = "the-final--countdown";
  auto split = [&](SplitBehavior b, bool invert = false) {
    return Pieces(*NewSplitPreTokenizer(Pattern::Literal("-"), b, invert), text);
  };
  EXPECT_EQ(split(SplitBehavior::kRemoved), (Strings{"the", "final", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kIsolated), (Strings{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithPrevious), (Strings{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithNext), (Strings{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split(SplitBehavior::kContiguous), (Strings{"the", "-", "final", "--", "countdown"}));
  // invert: the words become the delimiters, so Removed keeps only the dashes (each match of "-"
  // is its own piece).
  EXPECT_EQ(split(SplitBehavior::kRemoved, true), (Strings{"-", "-", "-"}));
  EXPECT_EQ(Pieces(*NewSplitPreTokenizer(RegexPattern("[0-9]+"), SplitBehavior::kRemoved, true), "ab12cd3"),
            (Strings{"12", "3"}));
}

TEST(SplitPreTokenizer, Gpt2AndLlama3Patterns) {
  const std::string text = "Hello  world\n\n  foo 123456 I'M";
  EXPECT_EQ(Pieces(*NewSplitPreTokenizer(RegexPattern(kGpt2SplitPattern), SplitBehavior::kIsolated, false), text),
            (Strings{"Hello", " ", " world", "\n\n ", " foo", " 123456", " I", "'", "M"}));
  const std::string llama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  EXPECT_EQ(Pieces(*NewSplitPreTokenizer(RegexPattern(llama3), SplitBehavior::kIsolated, false), text),
            (Strings{"Hello", " ", " world", "\n\n", " ", " foo", " ", "123", "456", " I", "'M"}));
}

TEST(SplitPreTokenizer, ThroughTokenizerJsonWithBothPatternKinds) {
  Json json = ByteLevelBase();
  // Splits before ByteLevel: each piece is BPE'd on its own, so the merge "a b" only applies
  // within a piece, which makes the cuts visible in the ids.
  json["model"]["vocab"]["ab"] = 300;
  json["model"]["merges"] = Json::array({"a b"});
  json["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"String", "|"}}}, {"behavior", "Removed"}, {"invert", false}},
        {{"type", "Split"}, {"pattern", {{"Regex", "b+"}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  auto tok = MustLoad(json);
  EXPECT_EQ(EncodeOrDie(*tok, "abab", false), (std::vector<int32_t>{300, 300}));  // "ab" "ab"
  EXPECT_EQ(EncodeOrDie(*tok, "ab|ab", false), (std::vector<int32_t>{300, 300}));
  EXPECT_EQ(EncodeOrDie(*tok, "a|b", false), Bytes("ab"));  // "a" "b": the '|' is removed
  // MergedWithNext cuts "abab" into "a" "ba" "b": nothing left to merge.
  json["pre_tokenizer"]["pretokenizers"][1]["behavior"] = "MergedWithNext";
  EXPECT_EQ(EncodeOrDie(*MustLoad(json), "abab", false), Bytes("abab"));
}

TEST(DigitsPreTokenizer, IndividualOrGrouped) {
  EXPECT_EQ(Pieces(*NewDigitsPreTokenizer(true), "a12b345"), (Strings{"a", "1", "2", "b", "3", "4", "5"}));
  EXPECT_EQ(Pieces(*NewDigitsPreTokenizer(false), "a12b345"), (Strings{"a", "12", "b", "345"}));
  // Unicode numerics count too (Arabic-Indic digits).
  EXPECT_EQ(Pieces(*NewDigitsPreTokenizer(true), "x\xD9\xA1\xD9\xA2"), (Strings{"x", "\xD9\xA1", "\xD9\xA2"}));

  Json json = ByteLevelBase();
  json["model"]["vocab"]["12"] = 300;
  json["model"]["merges"] = Json::array({Json::array({"1", "2"})});
  json["pre_tokenizer"] = {{"type", "Sequence"},
                           {"pretokenizers",
                            {{{"type", "Digits"}, {"individual_digits", true}},
                             {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  EXPECT_EQ(EncodeOrDie(*MustLoad(json), "x12", false), Bytes("x12"));
  json["pre_tokenizer"]["pretokenizers"][0]["individual_digits"] = false;
  EXPECT_EQ(EncodeOrDie(*MustLoad(json), "x12", false), Concat({Bytes("x"), {300}}));
}

TEST(OtherPreTokenizers, WhitespaceMetaspacePunctuationByteLevel) {
  EXPECT_EQ(Pieces(**NewWhitespacePreTokenizer(), "Hello, world!  ok"), (Strings{"Hello", ",", "world", "!", "ok"}));
  EXPECT_EQ(Pieces(*NewWhitespaceSplitPreTokenizer(), " a  b\tc "), (Strings{"a", "b", "c"}));
  EXPECT_EQ(Pieces(*NewPunctuationPreTokenizer(SplitBehavior::kIsolated), "a,b!?"), (Strings{"a", ",", "b", "!", "?"}));
  const std::string m = "\xE2\x96\x81";
  EXPECT_EQ(Pieces(*NewMetaspacePreTokenizer(m, PrependScheme::kAlways, true), "Hello world"),
            (Strings{m + "Hello", m + "world"}));
  EXPECT_EQ(Pieces(*NewMetaspacePreTokenizer(m, PrependScheme::kFirst, true), "Hello world", /*at_start=*/false),
            (Strings{"Hello", m + "world"}));
  EXPECT_EQ(Pieces(*NewMetaspacePreTokenizer(m, PrependScheme::kNever, false), "a b"), (Strings{"a" + m + "b"}));
  // ByteLevel: prefix space, GPT-2 split, byte mapping (' ' -> U+0120 'Ġ').
  EXPECT_EQ(Pieces(**NewByteLevelPreTokenizer(true, true), "Hi you"), (Strings{"\xC4\xA0Hi", "\xC4\xA0you"}));
  EXPECT_EQ(Pieces(**NewByteLevelPreTokenizer(false, false), "Hi you"), (Strings{"Hi\xC4\xA0you"}));
}

TEST(BpeModel, MergesApplyByRankInBothForms) {
  Json json = ByteLevelBase();
  json["model"]["vocab"]["ab"] = 300;
  json["model"]["vocab"]["bc"] = 301;
  json["model"]["merges"] = Json::array({"b c", Json::array({"a", "b"})});
  EXPECT_EQ(EncodeOrDie(*MustLoad(json), "abc", false), Concat({Bytes("a"), {301}}));
  json["model"]["merges"] = Json::array({Json::array({"a", "b"}), "b c"});
  EXPECT_EQ(EncodeOrDie(*MustLoad(json), "abc", false), Concat({{300}, Bytes("c")}));
}

TEST(BpeModel, IgnoreMerges) {
  Json json = ByteLevelBase();
  json["model"]["vocab"]["ab"] = 300;
  json["model"]["vocab"]["abc"] = 301;  // not reachable by merges
  json["model"]["merges"] = Json::array({"a b"});
  EXPECT_EQ(EncodeOrDie(*MustLoad(json), "abc", false), Concat({{300}, Bytes("c")}));
  json["model"]["ignore_merges"] = true;
  EXPECT_EQ(EncodeOrDie(*MustLoad(json), "abc", false), (std::vector<int32_t>{301}));
}

TEST(BpeModel, SubwordPrefixAndSuffix) {
  Json json = {{"model",
                {{"type", "BPE"},
                 {"continuing_subword_prefix", "##"},
                 {"vocab", {{"a", 0}, {"##b", 1}, {"##c", 2}, {"ab", 3}}},
                 {"merges", {"a ##b"}}}},
               {"pre_tokenizer", {{"type", "WhitespaceSplit"}}}};
  EXPECT_EQ(EncodeOrDie(*MustLoad(json), "abc ab", false), (std::vector<int32_t>{3, 2, 3}));
  json = {{"model",
           {{"type", "BPE"}, {"end_of_word_suffix", "</w>"}, {"vocab", {{"a", 0}, {"b</w>", 1}, {"ab</w>", 2}}},
            {"merges", {"a b</w>"}}}},
          {"pre_tokenizer", {{"type", "WhitespaceSplit"}}}};
  EXPECT_EQ(EncodeOrDie(*MustLoad(json), "ab ab", false), (std::vector<int32_t>{2, 2}));
}

// A SentencePiece-style (Llama-2 like) model: byte fallback, unk, Metaspace-ish normalizer.
Json ByteFallbackJson() {
  Json vocab = {{"<unk>", 0}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = 1 + b;
  }
  vocab["\xE2\x96\x81"] = 257;
  vocab["H"] = 258;
  vocab["i"] = 259;
  vocab["\xE2\x96\x81H"] = 260;
  vocab["\xE2\x96\x81Hi"] = 261;
  return {{"normalizer",
           {{"type", "Sequence"},
            {"normalizers",
             {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
              {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}}},
          {"pre_tokenizer", nullptr},
          {"decoder",
           {{"type", "Sequence"},
            {"decoders",
             {{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
              {{"type", "ByteFallback"}},
              {{"type", "Fuse"}},
              {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
          {"model",
           {{"type", "BPE"},
            {"unk_token", "<unk>"},
            {"byte_fallback", true},
            {"fuse_unk", true},
            {"vocab", vocab},
            {"merges", {"\xE2\x96\x81 H", "\xE2\x96\x81H i"}}}}};
}

TEST(BpeModel, ByteFallbackEncodesUnknownCharactersAsBytes) {
  auto tok = MustLoad(ByteFallbackJson());
  // "▁Hi▁Hi" merges fully; '€' (E2 82 AC) is not in the vocabulary and falls back to bytes.
  EXPECT_EQ(EncodeOrDie(*tok, "Hi Hi", false), (std::vector<int32_t>{261, 261}));
  EXPECT_EQ(EncodeOrDie(*tok, "Hi\xE2\x82\xAC", false), (std::vector<int32_t>{261, 1 + 0xE2, 1 + 0x82, 1 + 0xAC}));
  EXPECT_EQ(*tok->Decode(std::vector<int32_t>{261, 1 + 0xE2, 1 + 0x82, 1 + 0xAC, 261}, false), "Hi\xE2\x82\xAC Hi");
  // Half a character: each byte token of the invalid run becomes U+FFFD.
  EXPECT_EQ(*tok->Decode(std::vector<int32_t>{261, 1 + 0xE2, 1 + 0x82}, false), "Hi\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(BpeModel, DecodeBytesGivesEachByteTokensOwnByte) {
  auto tok = MustLoad(ByteFallbackJson());
  // Where Decode puts U+FFFD for half a character, DecodeBytes keeps the bytes, token by token.
  EXPECT_EQ(*tok->DecodeBytes(std::vector<int32_t>{261, 1 + 0xE2, 1 + 0x82}), "Hi\xE2\x82");
  EXPECT_EQ(*tok->DecodeBytes(std::vector<int32_t>{1 + 0xE2}), "\xE2");
  EXPECT_EQ(*tok->DecodeBytes(std::vector<int32_t>{1 + 0xAC}), "\xAC");
  // A whole character, and text without byte tokens: what Decode gives.
  const std::vector<int32_t> whole{261, 1 + 0xE2, 1 + 0x82, 1 + 0xAC, 261};
  EXPECT_EQ(*tok->DecodeBytes(whole), *tok->Decode(whole, false));
  EXPECT_FALSE(tok->DecodeBytes(std::vector<int32_t>{100000}).ok());  // not in the vocabulary
}

TEST(BpeModel, UnknownCharactersWithoutByteFallback) {
  Json json = ByteFallbackJson();
  json["model"]["byte_fallback"] = false;
  EXPECT_EQ(EncodeOrDie(*MustLoad(json), "Hi\xE2\x82\xAC\xE2\x82\xACi", false), (std::vector<int32_t>{261, 0, 259}));
  json["model"]["fuse_unk"] = false;
  EXPECT_EQ(EncodeOrDie(*MustLoad(json), "Hi\xE2\x82\xAC\xE2\x82\xACi", false), (std::vector<int32_t>{261, 0, 0, 259}));
  json["model"]["unk_token"] = nullptr;  // no unk: dropped, as tokenizers does
  EXPECT_EQ(EncodeOrDie(*MustLoad(json), "Hi\xE2\x82\xAC" "i", false), (std::vector<int32_t>{261, 259}));
}

TEST(Decoders, EachDecoder) {
  EXPECT_EQ(Decoded(*NewByteLevelDecoder(), {"\xC4\xA0hello", "<|x|>", "\xC4\xA0w"}), (Strings{" hello<|x|> w"}));
  EXPECT_EQ(Decoded(*NewByteLevelDecoder(), {"\xC3\xA2\xC4\xA4"}), (Strings{"\xEF\xBF\xBD"}));  // bytes E2 82: cut
  // kBytes carries them (U+10FEE2 U+10FE82) through the chain instead.
  Strings carried{"\xC3\xA2\xC4\xA4"};
  ASSERT_TRUE(NewByteLevelDecoder()->DecodeChain(&carried, DecodeOutput::kBytes).ok());
  EXPECT_EQ(carried, (Strings{"\xF4\x8F\xBB\xA2\xF4\x8F\xBA\x82"}));
  EXPECT_EQ(RestoreCarriedBytes(carried[0]), "\xE2\x82");
  EXPECT_EQ(Decoded(*NewFuseDecoder(), {"a", "b", "c"}), (Strings{"abc"}));
  EXPECT_EQ(Decoded(*NewStripDecoder(U' ', 1, 1), {"  a  ", " ", "b"}), (Strings{" a ", "", "b"}));
  EXPECT_EQ(Decoded(*NewReplaceDecoder(Pattern::Literal("_"), " "), {"a_b", "_"}), (Strings{"a b", " "}));
  EXPECT_EQ(Decoded(*NewMetaspaceDecoder(U'\u2581', true), {"\xE2\x96\x81Hello", "\xE2\x96\x81world"}),
            (Strings{"Hello", " world"}));
  EXPECT_EQ(Decoded(*NewMetaspaceDecoder(U'\u2581', false), {"\xE2\x96\x81Hi"}), (Strings{" Hi"}));
  EXPECT_EQ(Decoded(*NewByteFallbackDecoder(), {"a", "<0x41>", "<0xC3>", "<0xA9>", "b"}),
            (Strings{"a", "A\xC3\xA9", "b"}));
  std::vector<std::unique_ptr<Decoder>> seq;
  seq.push_back(NewReplaceDecoder(Pattern::Literal("_"), " "));
  seq.push_back(NewFuseDecoder());
  EXPECT_EQ(Decoded(*NewSequenceDecoder(std::move(seq)), {"_a", "_b"}), (Strings{" a b"}));
}

TEST(Decoders, NoDecoderJoinsWithSpaces) {
  Json json = {{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}}}, {"merges", Json::array()}}}};
  EXPECT_EQ(*MustLoad(json)->Decode(std::vector<int32_t>{0, 1, 0}, false), "a b a");
}

}  // namespace
}  // namespace unmask::tokenizer::testing
