// Golden vectors: GPT-2 ids from OpenAI's reference encoder, llada-like ids from the independent
// Python reference in tests/data/tokenizers/make_llada_like.py.
#include <fstream>
#include <thread>

#include "test_util.h"

namespace unmask::tokenizer::testing {
namespace {

Json ReadJson(const std::string& relative) {
  std::ifstream in(DataPath(relative));
  EXPECT_TRUE(in.good()) << relative;
  return Json::parse(in);
}

TEST(Gpt2Golden, EveryCaseEncodesToReferenceIdsAndRoundTrips) {
  const Json golden = ReadJson("gpt2/gpt2.golden.json");
  ASSERT_GE(golden["cases"].size(), 50u);
  for (const Json& c : golden["cases"]) {
    const std::string text = c["text"];
    const std::vector<int32_t> expected = c["ids"];
    // The reference knows no special tokens: compare with special-token parsing off.
    EXPECT_EQ(EncodeOrDie(Gpt2(), text, /*special=*/false), expected) << "text: " << text;
    auto decoded = Gpt2().Decode(expected, /*skip_special_tokens=*/false);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, text);
  }
}

TEST(Gpt2Golden, SpecialTokenParsingOnAndOff) {
  EXPECT_EQ(EncodeOrDie(Gpt2(), "<|endoftext|>", true), (std::vector<int32_t>{50256}));
  EXPECT_EQ(EncodeOrDie(Gpt2(), "<|endoftext|>", false),
            (std::vector<int32_t>{27, 91, 437, 1659, 5239, 91, 29}));
  const auto on = EncodeOrDie(Gpt2(), "Hello<|endoftext|> world", true);
  EXPECT_EQ(on, Concat({EncodeOrDie(Gpt2(), "Hello", false), {50256}, EncodeOrDie(Gpt2(), " world", false)}));
  // Special tokens are dropped by decode only when asked.
  EXPECT_EQ(*Gpt2().Decode(on, false), "Hello<|endoftext|> world");
  EXPECT_EQ(*Gpt2().Decode(on, true), "Hello world");
}

TEST(Gpt2Golden, Lookups) {
  EXPECT_EQ(Gpt2().TokenToId("Hello"), 15496);
  EXPECT_EQ(Gpt2().TokenToId("<|endoftext|>"), 50256);
  EXPECT_EQ(Gpt2().IdToToken(995), "\xC4\xA0world");  // "Ġworld"
  EXPECT_FALSE(Gpt2().TokenToId("no such token").has_value());
  EXPECT_FALSE(Gpt2().IdToToken(50257).has_value());
  EXPECT_TRUE(Gpt2().IsSpecialToken(50256));
  EXPECT_FALSE(Gpt2().IsSpecialToken(15496));
  EXPECT_EQ(Gpt2().id_limit(), 50257);
}

// Byte-level BPE splits characters outside its merges across tokens: decoded alone, such a
// token is U+FFFD; its bytes (DecodeBytes) join with its neighbours' into the text's UTF-8.
TEST(Gpt2Golden, EachTokensBytesJoinIntoTheText) {
  for (const Tokenizer* tok : {&Gpt2(), &LladaLike()}) {
    const std::string text = "na\xC3\xAFve \xE2\x82\xAC 5 \xF0\x9F\x98\x80 \xE6\x97\xA5\xE6\x9C\xAC<|endoftext|>";
    const auto ids = EncodeOrDie(*tok, text, /*special=*/true);
    std::string joined;
    int split = 0;
    for (int32_t id : ids) {
      auto bytes = tok->DecodeBytes(std::vector<int32_t>{id});
      ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
      const std::string alone = *tok->Decode(std::vector<int32_t>{id}, false);
      if (alone.find("\xEF\xBF\xBD") != std::string::npos) {
        ++split;
        EXPECT_NE(*bytes, alone) << id;
      } else {
        EXPECT_EQ(*bytes, alone) << id;
      }
      joined += *bytes;
    }
    EXPECT_EQ(joined, *tok->Decode(ids, false)) << tok->source();
    EXPECT_GT(split, 0) << tok->source() << ": no token held part of a character";
    EXPECT_EQ(*tok->DecodeBytes(ids), joined);
  }
}

TEST(Gpt2Golden, LongInputsAndCacheGiveTheSameIds) {
  // The same words again (now cached) and a word longer than the cache limit.
  const std::string text = "Hello world, hello again. " + std::string(600, 'x') + " Hello world";
  const auto first = EncodeOrDie(Gpt2(), text, false);
  const auto second = EncodeOrDie(Gpt2(), text, false);
  EXPECT_EQ(first, second);
  EXPECT_EQ(*Gpt2().Decode(first, false), text);
}

TEST(Gpt2Golden, ConcurrentEncodesAgree) {
  // Encode is const and shares the word cache between threads; results must not depend on it.
  const Json golden = ReadJson("gpt2/gpt2.golden.json");
  std::string text;
  for (const Json& c : golden["cases"]) text += c["text"].get<std::string>() + "\n";
  const auto expected = EncodeOrDie(Gpt2(), text, false);
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto ids = Gpt2().Encode(text, false);
        if (!ids.ok() || *ids != expected) ++mismatches[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(Gpt2Golden, PathologicalInputsDoNotBlowUp) {
  // A 2 MB whitespace run exercises the `\s+(?!\S)` backtracking, a 1 MB word the merge heap.
  const std::string spaces(2 << 20, ' ');
  auto ids = Gpt2().Encode(spaces + "x", false);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(*Gpt2().Decode(*ids, false), spaces + "x");
  std::string word;
  for (int i = 0; i < (1 << 20) / 8; ++i) word += "abcdefgh";
  ids = Gpt2().Encode(word, false);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_LT(ids->size(), word.size() / 2);
  EXPECT_EQ(*Gpt2().Decode(*ids, false), word);
}

TEST(LladaLikeGolden, EveryCaseMatchesTheReferenceEncoder) {
  const Json golden = ReadJson("tokenizers/llada-like.golden.json");
  ASSERT_GE(golden["cases"].size(), 15u);
  for (const Json& c : golden["cases"]) {
    const std::string text = c["text"];
    const bool special = c["parse_special_tokens"];
    const std::vector<int32_t> expected = c["ids"];
    EXPECT_EQ(EncodeOrDie(LladaLike(), text, special), expected) << "text: " << text;
    EXPECT_EQ(*LladaLike().Decode(expected, false), text);
  }
}

TEST(LladaLikeGolden, SpecialTokensHaveLladaIds) {
  EXPECT_EQ(LladaLike().TokenToId("<|startoftext|>"), 126080);
  EXPECT_EQ(LladaLike().TokenToId("<|endoftext|>"), 126081);
  EXPECT_EQ(LladaLike().TokenToId("<|mdm_mask|>"), 126336);
  EXPECT_EQ(LladaLike().TokenToId("<|start_header_id|>"), 126346);
  EXPECT_EQ(LladaLike().TokenToId("<|end_header_id|>"), 126347);
  EXPECT_EQ(LladaLike().TokenToId("<|eot_id|>"), 126348);
  EXPECT_EQ(EncodeOrDie(LladaLike(), "<|mdm_mask|><|eot_id|>", true), (std::vector<int32_t>{126336, 126348}));
  // Off: spelled out byte by byte-level BPE, no special id appears.
  for (int32_t id : EncodeOrDie(LladaLike(), "<|mdm_mask|><|eot_id|>", false)) EXPECT_LT(id, 126080);
}

}  // namespace
}  // namespace unmask::tokenizer::testing
