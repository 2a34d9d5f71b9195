// Streamed text of a diffusion model with the committed model's real tokenizer: deltas are the
// newly final prefix, they concatenate to the final text whatever order positions unmask in,
// and stop strings, EOS and split UTF-8 characters never make a delta that is taken back.
#include "services/scheduler/http/streamed_text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "common/util/strings.h"

#include "tests/http/kjv_tokenizer.h"

namespace unmask::scheduler::http {
namespace {

using testing::Encode;
using testing::kEos;
using testing::kEot;
using testing::Kjv;
using testing::kMask;

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

// Issue 31: a template with holes streams whole, its fixed text final from the start.
TEST(StreamedTextTest, ATemplateStreamsItsFixedTextAndFillsInPlace) {
  const auto head = Encode("In the"), fill = Encode(" beginning"), tail = Encode(" God created the heaven");
  std::vector<std::int64_t> region = head;
  for (std::size_t i = 0; i < fill.size(); ++i) region.push_back(kHoleId);
  region.insert(region.end(), tail.begin(), tail.end());
  const std::string whole = "In the beginning God created the heaven";
  for (int trial = 0; trial < 10; ++trial) {
    StreamedText text(Kjv(), {kMask, kEos, kEot}, static_cast<std::int64_t>(region.size()), {}, region);
    std::string joined = text.Begin().text;
    EXPECT_EQ(joined, "In the") << "the fixed text before the first hole is final before any step";
    std::vector<std::size_t> order = InOrder(fill.size());
    std::shuffle(order.begin(), order.end(), std::mt19937(trial));
    for (std::size_t k = 0; k < order.size(); ++k) {
      const std::string d = text.OnStep({static_cast<std::int64_t>(head.size() + order[k])}, {fill[order[k]]});
      if (k + 1 < order.size()) {
        EXPECT_EQ(d.find("God"), std::string::npos) << "fixed text after a masked hole";
      }
      joined += d;
    }
    EXPECT_EQ(joined, whole) << "the last hole filled makes the rest of the template final";
    std::vector<std::int64_t> filled = region;
    std::copy(fill.begin(), fill.end(), filled.begin() + static_cast<std::ptrdiff_t>(head.size()));
    const auto f = text.Finish(filled, "length");
    EXPECT_EQ(f.text, whole);
    EXPECT_EQ(f.delta, "");
    EXPECT_EQ(f.finish_reason, "stop");  // a filled template is a whole answer
  }
}

TEST(StreamedTextTest, AnEosInATemplatesHoleDoesNotEndIt) {
  const auto head = Encode("Amen"), tail = Encode(" and amen.");
  std::vector<std::int64_t> region = head;
  region.insert(region.end(), {kHoleId, kHoleId});
  region.insert(region.end(), tail.begin(), tail.end());
  StreamedText text(Kjv(), {kMask, kEos, kEot}, static_cast<std::int64_t>(region.size()), {}, region);
  std::string joined = text.Begin().text;
  const auto comma = Encode(",");
  ASSERT_EQ(comma.size(), 1u);
  joined += text.OnStep({static_cast<std::int64_t>(head.size() + 1)}, {kEos});
  joined += text.OnStep({static_cast<std::int64_t>(head.size())}, {comma[0]});
  EXPECT_EQ(joined, "Amen, and amen.");
  // The executor's ids: the whole region, or its holes' tokens alone.
  std::vector<std::int64_t> filled = region;
  filled[head.size()] = comma[0];
  filled[head.size() + 1] = kEos;
  StreamedText again(Kjv(), {kMask, kEos, kEot}, static_cast<std::int64_t>(region.size()), {}, region);
  EXPECT_EQ(again.Finish(filled, "eos").text, "Amen, and amen.");
  StreamedText holes(Kjv(), {kMask, kEos, kEot}, static_cast<std::int64_t>(region.size()), {}, region);
  EXPECT_EQ(holes.Finish({comma[0], kEos}, "eos").text, "Amen, and amen.");
  // A step never changes a fixed token.
  StreamedText fixed(Kjv(), {kMask, kEos, kEot}, static_cast<std::int64_t>(region.size()), {}, region);
  EXPECT_EQ(fixed.Begin().text, "Amen");
  EXPECT_EQ(fixed.OnStep({0}, {comma[0]}), "");
}

// With token tracking (logprobs), every token goes out exactly once, with the delta that
// streams the last of its text, and the pieces are the text.
struct Tracked {
  std::vector<StreamedText::Delta> deltas;
  StreamedText::Final final_text;
};

Tracked UnmaskTracked(const std::vector<std::int64_t>& ids, const std::vector<std::size_t>& order,
                      std::vector<std::string> stop, std::vector<std::int64_t> result = {}) {
  StreamedText text(Kjv(), {kMask, kEos, kEot}, static_cast<std::int64_t>(ids.size()), std::move(stop), {}, true);
  Tracked t;
  for (auto pos : order) t.deltas.push_back(text.Step({static_cast<std::int64_t>(pos)}, {ids[pos]}));
  t.final_text = text.Finish(result.empty() ? ids : result, "length");
  return t;
}

void ExpectEveryTokenOnce(const Tracked& t) {
  std::vector<std::int64_t> sent;
  std::string text;
  for (const auto& d : t.deltas) {
    EXPECT_EQ(d.first_token, sent.size());
    EXPECT_EQ(d.text_offset, CodePoints(text)) << "the code points of the earlier tokens' text";
    sent.insert(sent.end(), d.ids.begin(), d.ids.end());
    ASSERT_EQ(d.ids.size(), d.pieces.size());
    for (const auto& p : d.pieces) text += p;
  }
  const auto& f = t.final_text;
  EXPECT_EQ(f.first_unsent, sent.size());
  sent.insert(sent.end(), f.ids.begin() + static_cast<std::ptrdiff_t>(f.first_unsent), f.ids.end());
  EXPECT_EQ(sent, f.ids) << "the tokens of the deltas and the last chunk are the output's, once each, in order";
  std::string pieces;
  for (const auto& p : f.pieces) pieces += p;
  EXPECT_TRUE(StartsWith(pieces, f.text)) << pieces << " | " << f.text;
}

TEST(StreamedTextTest, TokensGoOutWithTheDeltaThatCompletesTheirText) {
  const std::string sentence = " In the beginning God created the heaven and the earth.";
  const auto ids = Encode(sentence);
  Tracked t = UnmaskTracked(ids, InOrder(ids.size()), {});
  ExpectEveryTokenOnce(t);
  for (const auto& d : t.deltas) {
    ASSERT_EQ(d.ids.size(), 1u) << "left to right, one token per step";
    EXPECT_EQ(d.pieces[0], d.text);
  }
  std::mt19937 rng(3);
  for (int trial = 0; trial < 10; ++trial) {
    std::vector<std::size_t> order = InOrder(ids.size());
    std::shuffle(order.begin(), order.end(), rng);
    t = UnmaskTracked(ids, order, {});
    ExpectEveryTokenOnce(t);
    for (const auto& d : t.deltas) {
      std::string joined;
      for (const auto& p : d.pieces) joined += p;
      EXPECT_EQ(joined, d.text) << "a chunk's tokens are exactly its text";
    }
    EXPECT_EQ(t.final_text.text, sentence);
    EXPECT_EQ(t.final_text.ids, ids);
  }
}

TEST(StreamedTextTest, HalfACharactersTokensGoOutWithTheCharacter) {
  const std::string word = " \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
  const auto ids = Encode(word);
  Tracked t = UnmaskTracked(ids, InOrder(ids.size()), {});
  ExpectEveryTokenOnce(t);
  for (const auto& d : t.deltas) {
    std::string joined;
    for (const auto& p : d.pieces) joined += p;
    EXPECT_EQ(joined, d.text);
    if (d.text.empty()) {
      EXPECT_TRUE(d.ids.empty()) << "a token of half a character went out before the character";
    }
  }
  EXPECT_EQ(t.final_text.text, word);
}

TEST(StreamedTextTest, AStopStringKeepsTheTokensWhoseTextBeginsBeforeIt) {
  const std::string sentence = " And God said, Let there be light: and there was light.";
  const auto ids = Encode(sentence);
  std::mt19937 rng(5);
  for (int trial = 0; trial < 5; ++trial) {
    std::vector<std::size_t> order = InOrder(ids.size());
    if (trial > 0) std::shuffle(order.begin(), order.end(), rng);
    Tracked t = UnmaskTracked(ids, order, {"light:"});
    ExpectEveryTokenOnce(t);
    EXPECT_EQ(t.final_text.text, " And God said, Let there be ");
    std::string pieces;
    for (std::size_t j = 0; j + 1 < t.final_text.pieces.size(); ++j) pieces += t.final_text.pieces[j];
    EXPECT_LT(pieces.size(), t.final_text.text.size()) << "the last token kept begins before the cut";
    EXPECT_LT(t.final_text.ids.size(), ids.size());
  }
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
