// The response and chunk bodies: the OpenAI shapes stock clients read, and unmask's extension.
#include "services/scheduler/http/openai_render.h"

#include <gtest/gtest.h>

#include <cmath>

#include "services/scheduler/http/logprobs_render.h"

namespace unmask::scheduler::http {
namespace {

using nlohmann::json;

v1::SubmitResponse Submitted() {
  v1::SubmitResponse s;
  s.set_job_id("job1");
  auto* a = s.mutable_accepted();
  a->mutable_params()->set_gen_length(64);
  a->mutable_params()->set_block_length(32);
  a->mutable_params()->set_steps(32);
  a->mutable_params()->set_sampler("dual_cache");
  a->set_prompt_tokens(9);
  auto* adj = a->add_adjustments();
  adj->set_field("gen_length");
  adj->set_asked("4096");
  adj->set_applied("64");
  adj->set_reason("fits the executors' memory");
  adj = a->add_adjustments();
  adj->set_field("steps");
  adj->set_asked("4096");
  adj->set_applied("32");
  adj->set_reason("at most gen_length");
  return s;
}

TEST(OpenAiRenderTest, ChatCompletionHasTheOpenAiShape) {
  const auto id = MakeIdentity(Endpoint::kChatCompletions, "job1", 1700000000, "unmask-kjv");
  const json r = CompletionResponse(id, "In the beginning", "stop", Usage(9, 4), AcceptedExtension(Submitted()));
  EXPECT_EQ(r["id"], "chatcmpl-job1");
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["created"], 1700000000);
  EXPECT_EQ(r["model"], "unmask-kjv");
  ASSERT_EQ(r["choices"].size(), 1u);
  EXPECT_EQ(r["choices"][0]["index"], 0);
  EXPECT_EQ(r["choices"][0]["message"], json({{"role", "assistant"}, {"content", "In the beginning"}}));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r["usage"], json({{"prompt_tokens", 9}, {"completion_tokens", 4}, {"total_tokens", 13}}));
  EXPECT_EQ(r["unmask"]["job_id"], "job1");
}

TEST(OpenAiRenderTest, TextCompletionCarriesText) {
  const auto id = MakeIdentity(Endpoint::kCompletions, "job1", 1, "m");
  const json r = CompletionResponse(id, "abc", "length", Usage(1, 2), nullptr);
  EXPECT_EQ(r["id"], "cmpl-job1");
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["choices"][0]["text"], "abc");
  EXPECT_FALSE(r["choices"][0].contains("message"));
  EXPECT_FALSE(r.contains("unmask"));
}

TEST(OpenAiRenderTest, ClampsAreReportedInTheExtensionAndTheHeader) {
  const json ext = AcceptedExtension(Submitted());
  ASSERT_EQ(ext["clamped"].size(), 2u);
  EXPECT_EQ(ext["clamped"][0], json({{"field", "max_tokens"}, {"asked", "4096"}, {"applied", "64"}, {"reason", "fits the executors' memory"}}));
  EXPECT_EQ(ext["clamped"][1]["field"], "steps");
  EXPECT_EQ(ext["params"]["max_tokens"], 64);
  EXPECT_EQ(ext["params"]["sampler"], "dual_cache");
  EXPECT_EQ(ext["params"]["remasking"], "low_confidence");
  EXPECT_FALSE(ext["params"].contains("early_stop")) << "unset stays absent";
  v1::SubmitResponse off = Submitted();
  off.mutable_accepted()->mutable_params()->set_early_stop(false);
  EXPECT_EQ(AcceptedExtension(off)["params"]["early_stop"], false);
  EXPECT_EQ(ClampedHeader(Submitted().accepted()), "max_tokens=4096->64, steps=4096->32");
  EXPECT_EQ(ClampedHeader(v1::Accepted()), "none");
  v1::Accepted odd;
  auto* adj = odd.add_adjustments();
  adj->set_field("sampler");
  adj->set_asked("a\nb");
  adj->set_applied("r\xC3\xA9");
  EXPECT_EQ(ClampedHeader(odd), "sampler=a?b->r??");  // nothing that could break the header
}

TEST(OpenAiRenderTest, ChatChunksCarryDeltasAndTheStep) {
  const auto id = MakeIdentity(Endpoint::kChatCompletions, "j", 5, "m");
  v1::StepEvent step;
  step.set_step(3);
  step.set_block(1);
  step.set_step_in_block(0);
  step.mutable_unmasked()->add_positions(7);
  step.mutable_unmasked()->add_positions(2);
  step.mutable_unmasked()->add_tokens(100);
  step.mutable_unmasked()->add_tokens(200);
  const json c = TextDeltaChunk(id, " the", nullptr, StepExtension(step));
  EXPECT_EQ(c["object"], "chat.completion.chunk");
  EXPECT_EQ(c["id"], "chatcmpl-j");
  EXPECT_EQ(c["choices"][0]["delta"], json({{"content", " the"}}));
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(c["unmask"], json({{"step", 3}, {"block", 1}, {"step_in_block", 0}, {"positions", {7, 2}}, {"tokens", {100, 200}}}));
  // No new final text: an empty delta, the step still there.
  const json empty = TextDeltaChunk(id, "", nullptr, StepExtension(step));
  EXPECT_EQ(empty["choices"][0]["delta"], json::object());
  const json last = TextDeltaChunk(id, "", "length", nullptr);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(last.contains("unmask"));
  const json first = ChatChunk(id, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr);
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
}

TEST(OpenAiRenderTest, SeveralChoicesAreIndexedInTheResponseAndTheirChunks) {
  const auto chat = MakeIdentity(Endpoint::kChatCompletions, "j0", 5, "m");
  const json r = CompletionResponse(chat, {{"a", "stop"}, {"b", "length"}, {"c", "stop"}}, Usage(3, 12), nullptr);
  ASSERT_EQ(r["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r["choices"][i]["index"], i);
  EXPECT_EQ(r["choices"][1]["message"]["content"], "b");
  EXPECT_EQ(r["choices"][1]["finish_reason"], "length");
  EXPECT_EQ(FirstChunk(chat, nullptr, 2)["choices"][0]["index"], 2);
  EXPECT_EQ(FirstChunk(chat, nullptr, 2)["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(TextDeltaChunk(chat, "x", nullptr, nullptr, 1)["choices"][0]["index"], 1);
  const auto text = MakeIdentity(Endpoint::kCompletions, "j0", 5, "m");
  EXPECT_EQ(CompletionResponse(text, {{"a", "stop"}, {"b", "stop"}}, Usage(1, 2), nullptr)["choices"][1]["text"], "b");
  EXPECT_EQ(TextDeltaChunk(text, "x", "stop", nullptr, 3)["choices"][0]["index"], 3);
  EXPECT_EQ(FirstChunk(text, nullptr)["choices"][0]["text"], "");
  // The extension lists every choice's job; a single choice's has no list.
  v1::SubmitResponse submitted = Submitted();
  EXPECT_FALSE(AcceptedExtension(submitted).contains("job_ids"));
  for (const char* job : {"j0", "j1"}) submitted.mutable_accepted()->add_job_ids(job);
  EXPECT_EQ(AcceptedExtension(submitted)["job_ids"], json({"j0", "j1"}));
}

TEST(OpenAiRenderTest, TextChunksAndTheUsageChunk) {
  const auto id = MakeIdentity(Endpoint::kCompletions, "j", 5, "m");
  const json c = TextDeltaChunk(id, "abc", "stop", nullptr);
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], "abc");
  EXPECT_EQ(c["choices"][0]["finish_reason"], "stop");
  const json u = UsageChunk(id, Usage(3, 4));
  EXPECT_EQ(u["choices"], json::array());
  EXPECT_EQ(u["usage"]["total_tokens"], 7);
}

TEST(OpenAiRenderTest, ServerSentEventsFraming) {
  EXPECT_EQ(SseData(json({{"a", 1}})), "data: {\"a\":1}\n\n");
  EXPECT_EQ(std::string(kSseDone), "data: [DONE]\n\n");
  EXPECT_EQ(SseComment("queued\nposition 1"), ": queued position 1\n\n");  // one line, whatever it holds
  // Text that is not valid UTF-8 cannot break the JSON of a chunk.
  EXPECT_EQ(SseData(json({{"t", std::string("a\xFF")}})), "data: {\"t\":\"a\xEF\xBF\xBD\"}\n\n");
}

// Issue 31: logprobs in a choice and a chunk, and completions' top_logprobs written most likely
// first (nlohmann's objects sort their keys).
TEST(OpenAiRenderTest, LogprobsRideOnTheChoiceAndTheChunk) {
  const json lp = {{"content", json::array()}};
  const auto chat = MakeIdentity(Endpoint::kChatCompletions, "j", 5, "m");
  EXPECT_EQ(CompletionResponse(chat, {ChoiceText{"a", "stop", lp}}, Usage(1, 1), nullptr)["choices"][0]["logprobs"], lp);
  EXPECT_TRUE(CompletionResponse(chat, "a", "stop", Usage(1, 1), nullptr)["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(TextDeltaChunk(chat, "a", nullptr, nullptr, 0, lp)["choices"][0]["logprobs"], lp);
  EXPECT_TRUE(TextDeltaChunk(chat, "a", nullptr, nullptr)["choices"][0]["logprobs"].is_null());
  const json first = FirstChunk(chat, nullptr, 1, "Verily", lp);
  EXPECT_EQ(first["choices"][0]["delta"], json({{"role", "assistant"}, {"content", "Verily"}}));
  EXPECT_EQ(first["choices"][0]["logprobs"], lp);
  const auto text = MakeIdentity(Endpoint::kCompletions, "j", 5, "m");
  const json echoed = FirstChunk(text, nullptr, 0, "In the beginning");
  EXPECT_EQ(echoed["choices"][0]["text"], "In the beginning");
}

TEST(OpenAiRenderTest, CompletionsTopLogprobsAreWrittenMostLikelyFirst) {
  const auto id = MakeIdentity(Endpoint::kCompletions, "j", 5, "m");
  const json lp = {{"tokens", {" a", " b"}},
                   {"token_logprobs", {-0.5, nullptr}},
                   {"top_logprobs", {{{" a", -0.5}, {" z", -0.1}, {" m", -3.0}, {"1", -2.0}}, nullptr}},
                   {"text_offset", {0, 2}}};
  const json body = CompletionResponse(id, {ChoiceText{" a b", "length", lp}}, Usage(1, 2), nullptr);
  const std::string dumped = DumpJson(body);
  const auto at = [&](const std::string& s) { return dumped.find(s); };
  ASSERT_NE(at("\" z\":-0.1"), std::string::npos) << dumped;
  EXPECT_LT(at("\" z\":-0.1"), at("\" a\":-0.5"));
  EXPECT_LT(at("\" a\":-0.5"), at("\"1\":-2.0"));
  EXPECT_LT(at("\"1\":-2.0"), at("\" m\":-3.0"));
  EXPECT_EQ(json::parse(dumped), body) << "only the order changes";
  // Everything else as dump() writes it, chat's top_logprobs entries included.
  const json alternative = {{"token", "a"}, {"logprob", -1.0}, {"bytes", {97}}};
  json entry = alternative;
  entry["top_logprobs"] = json::array({alternative});
  json chat = json::object();
  chat["choices"] = json::array({{{"logprobs", {{"content", json::array({entry})}}}}});
  EXPECT_EQ(DumpJson(chat), chat.dump());
  EXPECT_EQ(SseData(body), "data: " + dumped + "\n\n");
}

TEST(OpenAiRenderTest, LogprobsJsonHasBothShapes) {
  v1::TokenLogprob minus_inf;
  minus_inf.set_token(7);
  minus_inf.set_logprob(-INFINITY);
  auto* top = minus_inf.add_top();
  top->set_token(8);
  top->set_logprob(-0.25);
  const std::vector<LogprobToken> tokens = {{5, "ab", std::nullopt}, {7, "\xC3\xA9", minus_inf}};
  // No tokenizer: token strings are the ids.
  const json text = LogprobsJson(Endpoint::kCompletions, nullptr, tokens, 10);
  EXPECT_EQ(text["tokens"], json({"token_id:5", "token_id:7"}));
  EXPECT_EQ(text["token_logprobs"], json({nullptr, -9999.0})) << "-inf as OpenAI sends it";
  EXPECT_EQ(text["top_logprobs"], json({nullptr, {{"token_id:8", -0.25}}}));
  EXPECT_EQ(text["text_offset"], json({10, 12})) << "code points, from the offset given";
  const json chat = LogprobsJson(Endpoint::kChatCompletions, nullptr, tokens, 10);
  ASSERT_EQ(chat["content"].size(), 2u);
  EXPECT_TRUE(chat["content"][0]["logprob"].is_null());
  EXPECT_EQ(chat["content"][0]["top_logprobs"], json::array());
  EXPECT_EQ(chat["content"][1]["token"], "token_id:7");
  EXPECT_EQ(chat["content"][1]["bytes"].size(), std::string("token_id:7").size());
  EXPECT_EQ(chat["content"][1]["top_logprobs"],
            json({{{"token", "token_id:8"}, {"logprob", -0.25}, {"bytes", {116, 111, 107, 101, 110, 95, 105, 100, 58, 56}}}}));
}

// vLLM's prompt_logprobs: null first, then per token {id: {logprob, rank, decoded_token}} for the
// prompt's token and its k alternatives (ties share a rank; the prompt token's rank as the
// executor gave it); completions carry it on the choice, chat on the response.
TEST(OpenAiRenderTest, VllmPromptLogprobsHaveVllmsShapeAndPlace) {
  google::protobuf::RepeatedPtrField<v1::TokenLogprob> lps;
  v1::TokenLogprob* lp = lps.Add();
  lp->set_position(1);
  lp->set_token(7);
  lp->set_logprob(-3.5);
  lp->set_rank(12);
  for (auto [token, logprob] : {std::pair<int, double>{4, -0.5}, {9, -0.5}, {2, -1.0}}) {
    v1::TopLogprob* t = lp->add_top();
    t->set_token(token);
    t->set_logprob(logprob);
  }
  lp = lps.Add();  // the prompt's token is the most likely one
  lp->set_position(2);
  lp->set_token(4);
  lp->set_logprob(-0.25);
  lp->set_rank(1);
  lp->add_top()->set_token(4);
  lp->mutable_top(0)->set_logprob(-0.25);
  const json p = VllmPromptLogprobs(lps, 4, 2, nullptr);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_TRUE(p[0].is_null());
  EXPECT_TRUE(p[3].is_null()) << "a position not scored";
  ASSERT_EQ(p[1].size(), 3u) << p[1].dump();  // the token and 2 of the 3 alternatives
  EXPECT_EQ(p[1]["7"], (json{{"logprob", -3.5}, {"rank", 12}, {"decoded_token", nullptr}}));
  EXPECT_EQ(p[1]["4"]["rank"], 1);
  EXPECT_EQ(p[1]["9"]["rank"], 1) << "tied with the first";
  EXPECT_FALSE(p[1].contains("2")) << "beyond k";
  ASSERT_EQ(p[2].size(), 1u);
  EXPECT_EQ(p[2]["4"]["rank"], 1);
  EXPECT_EQ(p[2]["4"]["logprob"], -0.25);

  ChoiceText choice{"x", "length"};
  choice.prompt_logprobs = p;
  const json text = CompletionResponse(MakeIdentity(Endpoint::kCompletions, "j", 1, "m"), {choice}, Usage(4, 1), nullptr);
  EXPECT_EQ(text["choices"][0]["prompt_logprobs"], p);
  EXPECT_FALSE(text.contains("prompt_logprobs"));
  const json chat = CompletionResponse(MakeIdentity(Endpoint::kChatCompletions, "j", 1, "m"), {choice}, Usage(4, 1), nullptr);
  EXPECT_EQ(chat["prompt_logprobs"], p);
  EXPECT_FALSE(chat["choices"][0].contains("prompt_logprobs"));
}

TEST(OpenAiRenderTest, ModelList) {
  v1::ListServedModelsResponse models;
  auto* m = models.add_models();
  m->set_model("unmask-kjv");
  m->add_executors("executor-0");
  m->set_precision("bf16");
  m->set_budget_bytes(1024);
  const json list = ModelList(models);
  EXPECT_EQ(list["object"], "list");
  ASSERT_EQ(list["data"].size(), 1u);
  EXPECT_EQ(list["data"][0]["id"], "unmask-kjv");
  EXPECT_EQ(list["data"][0]["object"], "model");
  EXPECT_EQ(list["data"][0]["owned_by"], "unmask");
  EXPECT_EQ(list["data"][0]["unmask"]["executors"], json({"executor-0"}));
  EXPECT_EQ(ModelList({})["data"], json::array());
}

}  // namespace
}  // namespace unmask::scheduler::http
