// The committed trained model (models/unmask-kjv) through the real binaries, as a user meets
// it: the loader loads it, the executor serves it, and the CLI gets English back, words of its
// corpus, unmasked step by step; asked in chat form it answers and stops by itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/e2e/stack.h"
#include "tests/engine/test_paths.h"
#include "tools/train/verse_corpus.h"

namespace unmask::testing {
namespace {

using nlohmann::json;

std::vector<json> JsonLines(const std::string& out) {
  std::vector<json> lines;
  std::stringstream in(out);
  for (std::string line; std::getline(in, line);) {
    auto j = json::parse(line, nullptr, false);
    if (!j.is_discarded()) lines.push_back(j);
  }
  return lines;
}

using train::Words;

// Share of the words of `text` that the corpus has (tests/data/corpus/kjv-words.txt).
double CorpusShare(const std::string& text) {
  static const std::set<std::string> corpus = [] {
    std::set<std::string> s;
    std::ifstream in(TestDataPath("corpus/kjv-words.txt"));
    for (std::string w; std::getline(in, w);) s.insert(w);
    return s;
  }();
  const auto words = Words(text);
  if (words.empty()) return 0;
  std::size_t known = 0;
  for (const auto& w : words) known += corpus.count(w);
  return static_cast<double>(known) / static_cast<double>(words.size());
}

json Completed(const std::vector<json>& events) {
  for (const auto& e : events)
    if (e.contains("completed")) return e["completed"];
  return json();
}

TEST(TrainedModelEndToEndTest, TheCommittedModelWritesWordsOfItsCorpusThroughTheServices) {
  Stack stack(UNMASK_MODELS_DIR "/unmask-kjv", "unmask-kjv");
  stack.StartLoader();
  stack.StartExecutor();
  const int s = stack.StartScheduler();

  CliResult r = stack.Cli(s, "generate --model unmask-kjv --prompt 'And God said unto Moses,' --gen-length 64"
                             " --block-length 32 --steps 64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto events = JsonLines(r.out);
  int steps = 0;
  for (const auto& e : events) steps += e.contains("step");
  EXPECT_EQ(steps, 64);
  const json done = Completed(events);
  ASSERT_FALSE(done.is_null()) << r.out;
  const std::string text = done.value("text", "");
  EXPECT_GE(Words(text).size(), 20u) << text;
  EXPECT_GE(CorpusShare(text), 0.95) << text;
  EXPECT_EQ(text.find("\xEF\xBF\xBD"), std::string::npos) << "broken UTF-8 in: " << text;

  // Chat: the template goes in, an answer comes out and ends with EOT/EOS before the length runs
  // out. Small blocks (8 tokens, semi-autoregressive): with one 32-token block the EOS padding,
  // the model's most confident prediction, would be unmasked first and close the reply at once.
  r = stack.Cli(s, "generate --model unmask-kjv --chat 'What does John 3:16 say?' --gen-length 64"
                   " --block-length 8 --steps 64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json answer = Completed(JsonLines(r.out));
  ASSERT_FALSE(answer.is_null()) << r.out;
  const std::string reply = answer.value("text", "");
  EXPECT_EQ(answer.value("finish_reason", ""), "eos") << r.out;
  // "And he said unto him, Behold, I am come. ..." (the model is small: KJV-like, not the verse)
  EXPECT_GE(Words(reply).size(), 8u) << reply;
  EXPECT_GE(CorpusShare(reply), 0.95) << reply;
  EXPECT_EQ(reply.find("<|"), std::string::npos) << reply;
}

}  // namespace
}  // namespace unmask::testing
