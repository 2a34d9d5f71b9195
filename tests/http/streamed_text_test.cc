// Streamed text of a diffusion model with the committed model's real tokenizer: deltas are the
// newly final prefix, they concatenate to the final text whatever order positions unmask in,
// and stop strings, EOS and split UTF-8 characters never make a delta that is taken back.
#include "services/scheduler/http/streamed_text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace unmask::scheduler::http {
namespace {

constexpr std::int64_t kMask = 2, kEos = 0, kEot = 5;  // models/unmask-kjv/config.json

std::shared_ptr<const tokenizer::Tokenizer> Kjv() {
  static std::shared_ptr<const tokenizer::Tokenizer> tok = [] {
    auto t = tokenizer::Tokenizer::FromFile(std::string(UNMASK_MODELS_DIR) + "/unmask-kjv/tokenizer.json");
    if (!t.ok()) throw std::runtime_error(t.status().ToString());
    return std::shared_ptr<const tokenizer::Tokenizer>(std::move(*t));
  }();
  return tok;
}

std::vector<std::int64_t> Encode(const std::string& text) {
  auto ids = Kjv()->Encode(text, /*parse_special_tokens=*/false);
  EXPECT_TRUE(ids.ok());
  return {ids->begin(), ids->end()};
}

struct Streamed {
  std::vector<std::string> deltas;
  StreamedText::Final final_text;
  std::string Joined() const {
    std::string s;
    for (const auto& d : deltas) s += d;
    return s + final_text.delta;
  }
};

// Unmasks `ids` one position per step in the order `order`, then finishes.
Streamed Unmask(const std::vector<std::int64_t>& ids, const std::vector<std::size_t>& order, std::vector<std::string> stop,
             const std::string& finish = "length", std::vector<std::int64_t> result = {}) {
  StreamedText text(Kjv(), {kMask, kEos, kEot}, static_cast<std::int64_t>(ids.size()), std::move(stop));
  Streamed s;
  for (auto pos : order) s.deltas.push_back(text.OnStep({static_cast<std::int64_t>(pos)}, {ids[pos]}));
  s.final_text = text.Finish(result.empty() ? ids : result, finish);
  return s;
}

std::vector<std::size_t> InOrder(std::size_t n) {
  std::vector<std::size_t> o(n);
  for (std::size_t i = 0; i < n; ++i) o[i] = i;
  return o;
}

TEST(StreamedTextTest, DeltasAreTheNewlyFinalPrefixAndAddUpToTheText) {
  const std::string sentence = " In the beginning God created the heaven and the earth.";
  const auto ids = Encode(sentence);
  ASSERT_GT(ids.size(), 5u);
  // Last position first: nothing is final until position 0 is unmasked.
  std::vector<std::size_t> order = InOrder(ids.size());
  std::reverse(order.begin(), order.end());
  Streamed s = Unmask(ids, order, {});
  for (std::size_t i = 0; i + 1 < s.deltas.size(); ++i) EXPECT_EQ(s.deltas[i], "") << i;
  EXPECT_EQ(s.deltas.back(), sentence);
  EXPECT_EQ(s.final_text.text, sentence);
  EXPECT_EQ(s.final_text.delta, "");
  EXPECT_EQ(s.final_text.finish_reason, "length");

  // Left to right: one token's text per step.
  s = Unmask(ids, InOrder(ids.size()), {});
  EXPECT_EQ(s.deltas[0], Kjv()->Decode({static_cast<std::int32_t>(ids[0])}, true).value());
  EXPECT_EQ(s.Joined(), sentence);

  // Any order: the deltas still add up to exactly the text.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<std::size_t> shuffled = InOrder(ids.size());
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    EXPECT_EQ(Unmask(ids, shuffled, {}).Joined(), sentence);
  }
}

TEST(StreamedTextTest, StopStringsCutTheTextAndAreNeverStreamedInPart) {
  const std::string sentence = " And God said, Let there be light: and there was light.";
  const auto ids = Encode(sentence);
  Streamed s = Unmask(ids, InOrder(ids.size()), {"light:"});
  EXPECT_EQ(s.final_text.text, " And God said, Let there be ");
  EXPECT_EQ(s.final_text.finish_reason, "stop");
  EXPECT_EQ(s.Joined(), " And God said, Let there be ");
  for (const auto& d : s.deltas) EXPECT_EQ(d.find("light"), std::string::npos) << d;

  // A stop string that never completes is held back only while it could, then streamed.
  s = Unmask(ids, InOrder(ids.size()), {"light!"});
  EXPECT_EQ(s.final_text.text, sentence);
  EXPECT_EQ(s.final_text.finish_reason, "length");
  EXPECT_EQ(s.Joined(), sentence);

  // The earliest of several stop strings wins.
  s = Unmask(ids, InOrder(ids.size()), {"there was", ", Let"});
  EXPECT_EQ(s.final_text.text, " And God said");
  EXPECT_EQ(s.Joined(), " And God said");
}

TEST(StreamedTextTest, EosEndsTheTextAndIsAStop) {
  auto ids = Encode(" Amen.");
  const std::size_t words = ids.size();
  ids.push_back(kEot);
  ids.push_back(kEos);
  ids.push_back(Encode(" more")[0]);
  std::vector<std::size_t> order = InOrder(ids.size());
  std::reverse(order.begin(), order.end());
  // The executor returns the ids cut at EOS / EOT with finish reason "eos".
  Streamed s = Unmask(ids, order, {}, "eos", std::vector<std::int64_t>(ids.begin(), ids.begin() + words));
  EXPECT_EQ(s.final_text.text, " Amen.");
  EXPECT_EQ(s.final_text.finish_reason, "stop");
  EXPECT_EQ(s.Joined(), " Amen.");
  // The text after EOT never streams, even though it was unmasked first.
  for (const auto& d : s.deltas) EXPECT_EQ(d.find("more"), std::string::npos);
}

TEST(StreamedTextTest, HalfACharacterIsHeldBackUntilItsOtherBytesAreFinal) {
  const std::string word = " \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // é € and an emoji: bytes the corpus barely has
  const auto ids = Encode(word);
  ASSERT_GT(ids.size(), 3u) << "expected the characters to be split over byte tokens";
  Streamed s = Unmask(ids, InOrder(ids.size()), {});
  for (const auto& d : s.deltas) EXPECT_EQ(d.find("\xEF\xBF\xBD"), std::string::npos) << "a half character was streamed";
  EXPECT_EQ(s.Joined(), word);
  EXPECT_EQ(s.final_text.text, word);
}

TEST(StreamedTextTest, WithoutATokenizerThereIsNoText) {
  StreamedText text(nullptr, {kMask, kEos, kEot}, 4, {});
  EXPECT_EQ(text.OnStep({0, 1}, {10, 11}), "");
  const auto f = text.Finish({10, 11, 12, 13}, "length");
  EXPECT_EQ(f.text, "");
  EXPECT_EQ(f.finish_reason, "length");
}

}  // namespace
}  // namespace unmask::scheduler::http
