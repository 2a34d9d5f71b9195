// The byte-level BPE trainer: what it writes is a tokenizer.json this library loads, that
// round-trips text it never saw, and that never splits its special tokens.
#include "common/tokenizer/bpe_trainer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "common/tokenizer/tokenizer.h"

namespace unmask::tokenizer {
namespace {

const std::vector<std::string> kSpecials = {"<|endoftext|>", "<|startoftext|>", "<|mdm_mask|>",
                                            "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};

// The verse texts of the test corpus: the first 300 to train on, the other 100 held out.
std::vector<std::string> Verses(bool held_out) {
  std::ifstream in(std::string(UNMASK_TEST_DATA) + "/corpus/kjv-genesis-slice.txt");
  std::vector<std::string> out;
  std::string line;
  for (int i = 0; std::getline(in, line); ++i)
    if ((i >= 300) == held_out) out.push_back(line.substr(line.find(' ') + 1));
  EXPECT_FALSE(out.empty());
  return out;
}

std::unique_ptr<Tokenizer> Train(int vocab_size) {
  BpeTrainerOptions o;
  o.vocab_size = vocab_size;
  o.special_tokens = kSpecials;
  auto json = TrainByteLevelBpe(Verses(false), o);
  EXPECT_TRUE(json.ok()) << json.status().ToString();
  auto tok = Tokenizer::FromJson(*json, "trained");
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return std::move(tok).value();
}

TEST(BpeTrainer, HeldOutTextRoundTripsAndCompresses) {
  auto tok = Train(800);
  ASSERT_EQ(tok->id_limit(), 800);
  std::size_t bytes = 0, tokens = 0;
  for (const auto& verse : Verses(true)) {
    auto ids = tok->Encode(verse, false);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*tok->Decode(*ids, false), verse);
    bytes += verse.size();
    tokens += ids->size();
  }
  // Merges learned on other verses of the same book shorten unseen text well below a byte each.
  EXPECT_LT(static_cast<double>(tokens) / bytes, 0.4) << tokens << " tokens for " << bytes << " bytes";
}

TEST(BpeTrainer, SpecialTokensComeFirstAndAreNeverSplit) {
  auto tok = Train(600);
  for (std::size_t i = 0; i < kSpecials.size(); ++i) {
    EXPECT_EQ(tok->TokenToId(kSpecials[i]), static_cast<int32_t>(i));
    EXPECT_TRUE(tok->IsSpecialToken(static_cast<int32_t>(i)));
  }
  auto ids = tok->Encode("<|startoftext|>And God said<|eot_id|><|endoftext|>", /*parse_special_tokens=*/true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->front(), 1);
  EXPECT_EQ((*ids)[ids->size() - 2], 5);
  EXPECT_EQ(ids->back(), 0);
  for (std::size_t i = 1; i + 2 < ids->size(); ++i) EXPECT_GE((*ids)[i], 6);
  // As plain text the same strings are spelled out by ordinary tokens.
  auto plain = tok->Encode("<|eot_id|>", false);
  ASSERT_TRUE(plain.ok());
  EXPECT_GT(plain->size(), 1u);
}

TEST(BpeTrainer, TheSameCorpusGivesTheSameFile) {
  BpeTrainerOptions o;
  o.vocab_size = 500;
  o.special_tokens = kSpecials;
  auto a = TrainByteLevelBpe(Verses(false), o), b = TrainByteLevelBpe(Verses(false), o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  const auto j = nlohmann::json::parse(*a);
  EXPECT_EQ(j["model"]["type"], "BPE");
  EXPECT_EQ(j["pre_tokenizer"]["type"], "ByteLevel");
  EXPECT_EQ(j["model"]["merges"].size(), 500u - 256u - kSpecials.size());
  EXPECT_EQ(j["added_tokens"].size(), kSpecials.size());
}

TEST(BpeTrainer, RefusesWhatCannotMakeATokenizer) {
  BpeTrainerOptions o;
  o.special_tokens = kSpecials;
  o.vocab_size = 200;
  auto small = TrainByteLevelBpe(Verses(false), o);
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(small.status().message().find("too small for the 6 special tokens"), std::string::npos) << small.status().ToString();

  o.vocab_size = 600;
  auto empty = TrainByteLevelBpe({}, o);
  EXPECT_NE(empty.status().message().find("no text"), std::string::npos) << empty.status().ToString();

  auto invalid = TrainByteLevelBpe({"fine", std::string("bad \xC3(", 6)}, o);
  EXPECT_NE(invalid.status().message().find("text 1 is not valid UTF-8 at byte offset 4"), std::string::npos)
      << invalid.status().ToString();

  o.special_tokens = {"<a>", "<a>"};
  auto twice = TrainByteLevelBpe(Verses(false), o);
  EXPECT_NE(twice.status().message().find("'<a>' is given twice"), std::string::npos) << twice.status().ToString();
  o.special_tokens = {""};
  EXPECT_EQ(TrainByteLevelBpe(Verses(false), o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace unmask::tokenizer
