// One choice's output with the committed model's real tokenizer (issue 31): completions' echo,
// a template's fixed text, and logprobs in both endpoints' shapes, whole and streamed, the
// streamed chunks carrying exactly the tokens of their text.
#include "services/scheduler/http/choice_output.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "tests/http/kjv_tokenizer.h"

namespace unmask::scheduler::http {
namespace {

using nlohmann::json;

using testing::Encode;
using testing::kEos;
using testing::kEot;
using testing::Kjv;
using testing::kMask;

// A made-up log-probability of token `id` at `position`, with k alternatives, the chosen token
// first (most likely) when `chosen_first`.
v1::TokenLogprob Logprob(std::int64_t position, std::int64_t id, int k) {
  v1::TokenLogprob lp;
  lp.set_position(position);
  lp.set_token(id);
  lp.set_logprob(-0.1 * static_cast<double>(position + 1));
  for (int j = 0; j < k; ++j) {
    auto* top = lp.add_top();
    top->set_token(j == 0 ? id : 100 + j);
    top->set_logprob(j == 0 ? lp.logprob() : lp.logprob() - j);
  }
  return lp;
}

OutputPlan Plan(Endpoint endpoint, std::int64_t gen_length, int logprobs) {
  OutputPlan plan;
  plan.endpoint = endpoint;
  plan.tokenizer = Kjv();
  plan.token_ids = {kMask, kEos, kEot};
  plan.gen_length = gen_length;
  plan.logprobs = logprobs;
  return plan;
}

v1::Completed Completed(const std::vector<std::int64_t>& ids, const std::vector<bool>& generated, int k) {
  v1::Completed c;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    c.add_ids(ids[i]);
    if (generated.empty() || generated[i]) *c.add_logprobs() = Logprob(static_cast<std::int64_t>(i), ids[i], k);
  }
  c.set_finish_reason("length");
  return c;
}

// Appends one completions logprobs object to another (the chunks of a stream, joined).
void Append(json& into, const json& chunk) {
  if (chunk.is_null()) return;
  if (into.is_null()) into = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()}, {"text_offset", json::array()}};
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"})
    for (const auto& v : chunk[key]) into[key].push_back(v);
}

// The executor's prompt log-probabilities: every prompt token but the first, logprob -(10 + index).
void AddPromptLogprobs(const std::vector<std::int64_t>& prompt, int k,
                       google::protobuf::RepeatedPtrField<v1::TokenLogprob>& out) {
  for (std::size_t j = 1; j < prompt.size(); ++j) {
    v1::TokenLogprob lp = Logprob(static_cast<std::int64_t>(j), prompt[j], k);
    lp.set_logprob(-10.0 - static_cast<double>(j));
    *out.Add() = lp;
  }
}

TEST(ChoiceOutputTest, CompletionsEchoComesFirstWithThePromptsLogprobsAndTrueOffsets) {
  const std::string prompt = "And God said", completion = " Let there be light";
  const auto gen = Encode(completion);
  OutputPlan plan = Plan(Endpoint::kCompletions, static_cast<std::int64_t>(gen.size()), 2);
  plan.echo = true;
  plan.echo_text = prompt;
  plan.echo_ids = Encode(prompt);
  ASSERT_GE(plan.echo_ids.size(), 3u);
  v1::Completed completed = Completed(gen, {}, 2);
  AddPromptLogprobs(plan.echo_ids, 2, *completed.mutable_prompt_logprobs());
  const auto done = ChoiceOutput(plan).Finish(completed, "job-1");
  EXPECT_EQ(done.text, prompt + completion);
  const json& lp = done.logprobs;
  ASSERT_EQ(lp["tokens"].size(), plan.echo_ids.size() + gen.size()) << lp.dump();
  for (std::size_t i = 0; i < lp["tokens"].size(); ++i) {
    const std::string token = lp["tokens"][i];
    const std::size_t offset = lp["text_offset"][i];
    EXPECT_EQ(done.text.compare(offset, token.size(), token), 0) << i << ": '" << token << "' at " << offset;
    if (i == 0) {
      EXPECT_TRUE(lp["token_logprobs"][i].is_null()) << "nothing comes before the first token";
      EXPECT_TRUE(lp["top_logprobs"][i].is_null());
      continue;
    }
    if (i < plan.echo_ids.size()) {
      EXPECT_DOUBLE_EQ(lp["token_logprobs"][i].get<double>(), -10.0 - static_cast<double>(i));
      ASSERT_EQ(lp["top_logprobs"][i].size(), 2u);
      continue;
    }
    const std::size_t position = i - plan.echo_ids.size();
    EXPECT_DOUBLE_EQ(lp["token_logprobs"][i].get<double>(), -0.1 * static_cast<double>(position + 1));
    ASSERT_EQ(lp["top_logprobs"][i].size(), 2u);
    EXPECT_DOUBLE_EQ(lp["top_logprobs"][i][token].get<double>(), lp["token_logprobs"][i].get<double>());
  }
}

TEST(ChoiceOutputTest, ScoreOnlyIsThePromptAloneWithItsLogprobsWholeAndStreamed) {
  const std::string prompt = "And God said";
  OutputPlan plan = Plan(Endpoint::kCompletions, 1, 1);
  plan.echo = true;
  plan.echo_text = prompt;
  plan.echo_ids = Encode(prompt);
  plan.score_only = true;
  v1::Completed completed = Completed(Encode(" Let"), {}, 1);  // the one token the job ran: dropped
  AddPromptLogprobs(plan.echo_ids, 1, *completed.mutable_prompt_logprobs());
  const auto done = ChoiceOutput(plan).Finish(completed, "job-1");
  EXPECT_EQ(done.text, prompt);
  EXPECT_EQ(done.finish_reason, "length");
  ASSERT_EQ(done.logprobs["tokens"].size(), plan.echo_ids.size()) << done.logprobs.dump();
  EXPECT_TRUE(done.logprobs["token_logprobs"][0].is_null());
  EXPECT_DOUBLE_EQ(done.logprobs["token_logprobs"][1].get<double>(), -11.0);
  // Streamed: the prompt and its logprobs first, then nothing of the dropped token.
  ChoiceOutput out(plan);
  out.OnPromptLogprobs(completed.prompt_logprobs());
  EXPECT_EQ(out.Begin().text, prompt);
  v1::StepEvent step;
  step.mutable_unmasked()->add_positions(0);
  step.mutable_unmasked()->add_tokens(completed.ids(0));
  const auto chunk = out.OnStep(step);
  EXPECT_EQ(chunk.text, "");
  EXPECT_TRUE(chunk.logprobs.is_null());
  const auto last = out.Finish(completed, "job-1").last;
  EXPECT_EQ(last.text, "");
  EXPECT_TRUE(last.logprobs.is_null());
}

TEST(ChoiceOutputTest, EchoWithoutThePromptsLogprobsOrWithOthersTokensHasNulls) {
  const std::string prompt = "And God said";
  const auto gen = Encode(" Let");
  OutputPlan plan = Plan(Endpoint::kCompletions, static_cast<std::int64_t>(gen.size()), 0);
  plan.echo = true;
  plan.echo_text = prompt;
  plan.echo_ids = Encode(prompt);
  // No prompt logprobs at all (an executor of before), then ones for other tokens than the
  // prompt's (the executor scored what the core encoded; a token that differs is not this one).
  for (bool others : {false, true}) {
    v1::Completed completed = Completed(gen, {}, 0);
    if (others) {
      std::vector<std::int64_t> shifted = plan.echo_ids;
      for (auto& id : shifted) id += 1;
      AddPromptLogprobs(shifted, 0, *completed.mutable_prompt_logprobs());
    }
    const json lp = ChoiceOutput(plan).Finish(completed, "job-1").logprobs;
    for (std::size_t i = 0; i < plan.echo_ids.size(); ++i) EXPECT_TRUE(lp["token_logprobs"][i].is_null()) << others << " " << i;
    EXPECT_FALSE(lp["token_logprobs"][plan.echo_ids.size()].is_null());
  }
}

TEST(ChoiceOutputTest, StreamedEchoWaitsForThePromptsLogprobsAndItsFirstChunkCarriesThem) {
  const std::string prompt = "And God said";
  OutputPlan plan = Plan(Endpoint::kCompletions, 4, 1);
  plan.echo = true;
  plan.echo_text = prompt;
  plan.echo_ids = Encode(prompt);
  ChoiceOutput out(plan);
  EXPECT_TRUE(out.BeginWaitsForPrompt());
  v1::StepEvent first_step;
  AddPromptLogprobs(plan.echo_ids, 1, *first_step.mutable_prompt_logprobs());
  out.OnPromptLogprobs(first_step.prompt_logprobs());
  const auto first = out.Begin();
  EXPECT_EQ(first.text, prompt);
  ASSERT_EQ(first.logprobs["token_logprobs"].size(), plan.echo_ids.size());
  EXPECT_TRUE(first.logprobs["token_logprobs"][0].is_null());
  for (std::size_t i = 1; i < plan.echo_ids.size(); ++i)
    EXPECT_DOUBLE_EQ(first.logprobs["token_logprobs"][i].get<double>(), -10.0 - static_cast<double>(i));
  OutputPlan plain = plan;
  plain.logprobs = -1;
  EXPECT_FALSE(ChoiceOutput(plain).BeginWaitsForPrompt()) << "echo without logprobs has nothing to wait for";
}

TEST(ChoiceOutputTest, StreamedChunksCarryTheLogprobsOfExactlyTheirText) {
  const std::string prompt = "In the beginning", completion = " God created the heaven and the earth.";
  const auto gen = Encode(completion);
  OutputPlan plan = Plan(Endpoint::kCompletions, static_cast<std::int64_t>(gen.size()), 3);
  plan.echo = true;
  plan.echo_text = prompt;
  plan.echo_ids = Encode(prompt);
  const auto whole = ChoiceOutput(plan).Finish(Completed(gen, {}, 3), "job-1");
  std::mt19937 rng(11);
  for (int trial = 0; trial < 8; ++trial) {
    ChoiceOutput out(plan);
    const auto first = out.Begin();
    EXPECT_EQ(first.text, prompt);
    std::string text = first.text;
    json joined;
    Append(joined, first.logprobs);
    std::vector<std::size_t> order(gen.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t pos : order) {
      v1::StepEvent step;
      step.mutable_unmasked()->add_positions(static_cast<std::int64_t>(pos));
      step.mutable_unmasked()->add_tokens(gen[pos]);
      *step.add_logprobs() = Logprob(static_cast<std::int64_t>(pos), gen[pos], 3);
      const auto chunk = out.OnStep(step);
      std::string tokens;
      if (!chunk.logprobs.is_null()) {
        for (const auto& t : chunk.logprobs["tokens"]) tokens += t.get<std::string>();
      }
      EXPECT_EQ(tokens, chunk.text) << "a chunk's logprobs are those of the tokens of its text";
      text += chunk.text;
      Append(joined, chunk.logprobs);
    }
    const auto done = out.Finish(Completed(gen, {}, 3), "job-1");
    text += done.last.text;
    Append(joined, done.last.logprobs);
    EXPECT_EQ(text, whole.text);
    EXPECT_EQ(joined, whole.logprobs) << "streamed: the same tokens, logprobs and offsets as the whole response";
  }
}

TEST(ChoiceOutputTest, ATemplatesFixedTokensHaveNullLogprobsInChat) {
  const auto head = Encode("Verily"), fill = Encode(", I say"), tail = Encode(" unto thee.");
  std::vector<std::int64_t> region = head, filled = head;
  std::vector<bool> generated(head.size(), false);
  for (auto id : fill) {
    region.push_back(kHoleId);
    filled.push_back(id);
    generated.push_back(true);
  }
  region.insert(region.end(), tail.begin(), tail.end());
  filled.insert(filled.end(), tail.begin(), tail.end());
  generated.resize(filled.size(), false);
  OutputPlan plan = Plan(Endpoint::kChatCompletions, static_cast<std::int64_t>(region.size()), 1);
  plan.region = region;

  ChoiceOutput out(plan);
  const auto first = out.Begin();
  EXPECT_EQ(first.text, "Verily");
  ASSERT_FALSE(first.logprobs.is_null());
  ASSERT_EQ(first.logprobs["content"].size(), head.size());
  EXPECT_TRUE(first.logprobs["content"][0]["logprob"].is_null());

  const auto done = out.Finish(Completed(filled, generated, 1), "job-1");
  EXPECT_EQ(done.text, "Verily, I say unto thee.");
  EXPECT_EQ(done.finish_reason, "stop");
  const json& content = done.logprobs["content"];
  ASSERT_EQ(content.size(), filled.size());
  std::string joined;
  for (std::size_t i = 0; i < content.size(); ++i) {
    const std::string token = content[i]["token"];
    joined += token;
    std::vector<int> bytes(token.begin(), token.end());
    for (auto& b : bytes) b &= 0xFF;
    EXPECT_EQ(content[i]["bytes"], json(bytes));
    if (generated[i]) {
      EXPECT_DOUBLE_EQ(content[i]["logprob"].get<double>(), -0.1 * static_cast<double>(i + 1));
      ASSERT_EQ(content[i]["top_logprobs"].size(), 1u);
      EXPECT_EQ(content[i]["top_logprobs"][0]["token"], token);
    } else {
      EXPECT_TRUE(content[i]["logprob"].is_null()) << "fixed token " << i;
      EXPECT_EQ(content[i]["top_logprobs"], json::array());
    }
  }
  EXPECT_EQ(joined, done.text);
}

// A character the tokenizer has no merge for is split into byte tokens: each such token's
// `token` is U+FFFD (decoded alone), its `bytes` the bytes it holds, and the bytes of all
// tokens join into the text's UTF-8, as OpenAI's `bytes` are meant to be used.
TEST(ChoiceOutputTest, ChatBytesAreEachTokensOwnBytesAlsoForHalfACharacter) {
  const std::string answer = "Verily \xF0\x9F\x95\x8A peace";  // U+1F54A, a dove
  const auto gen = Encode(answer);
  OutputPlan plan = Plan(Endpoint::kChatCompletions, static_cast<std::int64_t>(gen.size()), 1);
  ChoiceOutput out(plan);
  out.Begin();
  const auto done = out.Finish(Completed(gen, {}, 1), "job-1");
  ASSERT_EQ(done.text, answer);
  const json& content = done.logprobs["content"];
  ASSERT_EQ(content.size(), gen.size());
  std::string joined;
  int partial = 0;
  for (const json& entry : content) {
    std::string bytes;
    for (int b : entry["bytes"]) bytes.push_back(static_cast<char>(b));
    joined += bytes;
    if (entry["token"].get<std::string>().find("\xEF\xBF\xBD") != std::string::npos) {
      ++partial;
      EXPECT_EQ(bytes.find("\xEF\xBF\xBD"), std::string::npos) << "bytes, not U+FFFD";
    } else {
      EXPECT_EQ(bytes, entry["token"].get<std::string>());
    }
    // Alternatives get their bytes the same way (here the chosen token is the first one).
    EXPECT_EQ(entry["top_logprobs"][0]["bytes"], entry["bytes"]);
  }
  EXPECT_GT(partial, 1) << "the dove was not split across tokens";
  EXPECT_EQ(joined, answer);
}

TEST(ChoiceOutputTest, WithoutLogprobsThereAreNone) {
  const auto gen = Encode(" Amen.");
  OutputPlan plan = Plan(Endpoint::kCompletions, static_cast<std::int64_t>(gen.size()), -1);
  ChoiceOutput out(plan);
  EXPECT_TRUE(out.Begin().logprobs.is_null());
  v1::StepEvent step;
  step.mutable_unmasked()->add_positions(0);
  step.mutable_unmasked()->add_tokens(gen[0]);
  EXPECT_TRUE(out.OnStep(step).logprobs.is_null());
  const auto done = out.Finish(Completed(gen, {}, 0), "job-1");
  EXPECT_EQ(done.text, " Amen.");
  EXPECT_TRUE(done.logprobs.is_null());
  EXPECT_TRUE(done.last.logprobs.is_null());
}

TEST(ChoiceOutputTest, TheEosThatEndsTheTextIsNotAToken) {
  auto ids = Encode(" Amen.");
  const std::size_t words = ids.size();
  OutputPlan plan = Plan(Endpoint::kCompletions, static_cast<std::int64_t>(words + 2), 0);
  v1::Completed c = Completed(ids, {}, 0);  // the executor cut the ids at the EOS
  c.set_finish_reason("eos");
  const auto done = ChoiceOutput(plan).Finish(c, "job-1");
  EXPECT_EQ(done.finish_reason, "stop");
  EXPECT_EQ(done.logprobs["tokens"].size(), words);
  for (const auto& top : done.logprobs["top_logprobs"]) EXPECT_EQ(top, json::object()) << "logprobs 0: no alternatives";
}

}  // namespace
}  // namespace unmask::scheduler::http
