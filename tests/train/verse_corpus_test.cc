#include "tools/train/verse_corpus.h"

#include <gtest/gtest.h>

#include "common/tokenizer/bpe_trainer.h"
#include "tools/train/training_data.h"

namespace unmask::train {
namespace {

TEST(VerseCorpus, ParsesReferencesAndGroupsChapters) {
  auto c = ParseVerseCorpus("Ge1:1 In the beginning.\nGe1:2 And the earth.\n1Sm3:10 And the LORD came.\n", "t", 2);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // Chapters 0 (Ge 1) and 1 (1Sm 3); with held_out_every 2 the chapter at index 1 is held out.
  ASSERT_EQ(c->train.size(), 1u);
  ASSERT_EQ(c->held_out.size(), 1u);
  EXPECT_EQ(c->train[0].Text(), "In the beginning. And the earth.");
  EXPECT_EQ(c->held_out[0].book, "1Sm");
  EXPECT_EQ(c->held_out[0].chapter, 3);
  EXPECT_EQ(c->held_out[0].verses[0].verse, 10);
  EXPECT_EQ(BookName("1Sm"), "1 Samuel");
  EXPECT_EQ(BookName("SSol"), "Song of Solomon");
  EXPECT_EQ(BookName("Zzz"), "Zzz");
}

TEST(VerseCorpus, WordsAreLowerCasedLetterRunsKeepingTheirSuffix) {
  EXPECT_EQ(Words("And God's LORD, 1 thee;--Amen."),
            (std::vector<std::string>{"and", "god's", "lord", "thee", "amen"}));
  EXPECT_TRUE(Words(" 12 ; ").empty());
}

TEST(VerseCorpus, BadLinesAreNamed) {
  auto bad = ParseVerseCorpus("Ge1:1 In the beginning.\n\nthis is not a verse\n", "kjv.txt");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("kjv.txt:3: not a verse line"), std::string::npos) << bad.status().ToString();
  for (const char* line : {"Ge1: text", "Ge:1 text", "1:1 text", "Ge1:1", "Ge1:1x text"})
    EXPECT_FALSE(ParseVerseCorpus(line, "t").ok()) << line;
  EXPECT_NE(ParseVerseCorpus("\n \n", "empty.txt").status().message().find("empty.txt: the corpus holds no verse"),
            std::string::npos);
  auto missing = ReadVerseCorpus("/nonexistent/kjv.txt");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/kjv.txt"), std::string::npos);
}

TEST(TrainingData, ChatPairsAreTheTemplateAndAnAnswerEndingInEot) {
  auto c = ParseVerseCorpus("Ge1:1 In the beginning God created the heaven and the earth.\n", "t");
  ASSERT_TRUE(c.ok());
  tokenizer::BpeTrainerOptions o;
  o.vocab_size = 400;
  o.special_tokens = TrainedSpecialTokens();
  auto json = tokenizer::TrainByteLevelBpe({c->train[0].Text()}, o);
  ASSERT_TRUE(json.ok());
  auto tok = tokenizer::Tokenizer::FromJson(*json, "t");
  ASSERT_TRUE(tok.ok());
  auto ids = tokenizer::FindChatTokenIds(**tok);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(ids->eos, 0);
  EXPECT_EQ(ids->mask, 2);
  EXPECT_EQ(ids->eot, 5);
  auto pairs = MakeChatExamples(c->train, **tok, *ids, 128);
  ASSERT_TRUE(pairs.ok());
  ASSERT_EQ(pairs->size(), 2u);
  EXPECT_EQ((*pairs)[0].question, "What does Genesis 1:1 say?");
  EXPECT_EQ((*pairs)[1].question, "Finish the verse: In the beginning God created");
  EXPECT_EQ((*pairs)[1].reply, "the heaven and the earth.");
  for (const auto& p : *pairs) {
    EXPECT_EQ(p.prompt.front(), ids->bos);
    EXPECT_EQ(p.answer.back(), ids->eot);
    EXPECT_EQ(*(*tok)->Decode(std::vector<int32_t>(p.answer.begin(), p.answer.end() - 1), false), p.reply);
  }
  // Pairs longer than the limit are left out.
  EXPECT_TRUE(MakeChatExamples(c->train, **tok, *ids, 10)->empty());
}

}  // namespace
}  // namespace unmask::train
