// A chat choice with tools, with the
// committed model's real tokenizer: the calls the output holds come back as OpenAI's
// message.tool_calls with finish_reason "tool_calls", whole and streamed; streamed, the content
// stops where a call may begin and the calls come in the last chunk; output that holds no call
// that parses is content, as it would be without tools.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "services/scheduler/http/choice_output.h"
#include "services/scheduler/http/openai_render.h"
#include "services/scheduler/tool_calls.h"

#include "tests/http/kjv_tokenizer.h"

namespace unmask::scheduler::http {
namespace {

using nlohmann::json;

using testing::Encode;
using testing::kEos;
using testing::kEot;
using testing::Kjv;
using testing::kMask;

OutputPlan ToolPlan(std::int64_t gen_length, const std::string& tool_choice = "auto") {
  OutputPlan plan;
  plan.endpoint = Endpoint::kChatCompletions;
  plan.tokenizer = Kjv();
  plan.token_ids = {kMask, kEos, kEot};
  plan.gen_length = gen_length;
  v1::ChatMessages chat;
  chat.add_tools()->set_name("get_weather");
  chat.set_tool_choice(tool_choice);
  plan.tool_use = ToolUseOf(chat);
  return plan;
}

v1::Completed Completed(const std::vector<std::int64_t>& ids) {
  v1::Completed c;
  for (auto id : ids) c.add_ids(id);
  c.set_finish_reason("length");
  return c;
}

// The choice streamed: steps unmasking `ids` in a random order; the content chunks joined and
// the last chunk's result.
struct Streamed {
  std::string content;
  std::vector<std::string> chunks;
  ChoiceOutput::Done done;
};
Streamed Stream(const OutputPlan& plan, const std::vector<std::int64_t>& ids, unsigned seed) {
  Streamed s;
  ChoiceOutput out(plan);
  s.content = out.Begin().text;
  std::vector<std::size_t> order(ids.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  for (std::size_t pos : order) {
    v1::StepEvent step;
    step.mutable_unmasked()->add_positions(static_cast<std::int64_t>(pos));
    step.mutable_unmasked()->add_tokens(ids[pos]);
    const std::string text = out.OnStep(step).text;
    s.chunks.push_back(text);
    s.content += text;
  }
  s.done = out.Finish(Completed(ids), "job-1");
  s.content += s.done.last.text;
  return s;
}

const char kAnswer[] =
    "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Jerusalem\"}}\n</tool_call>";

TEST(ToolCallsOutputTest, TheCallsComeAsToolCallsWholeAndStreamed) {
  const auto ids = Encode(kAnswer);
  ASSERT_EQ(Kjv()->Decode(std::vector<std::int32_t>(ids.begin(), ids.end()), true).value(), kAnswer);
  const OutputPlan plan = ToolPlan(static_cast<std::int64_t>(ids.size()));
  const auto whole = ChoiceOutput(plan).Finish(Completed(ids), "job-1");
  EXPECT_EQ(whole.text, "Let me look.\n");
  EXPECT_EQ(whole.finish_reason, "tool_calls");
  EXPECT_EQ(whole.tool_calls, json::parse(R"([{"id": "call_job-1_0", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\":\"Jerusalem\"}"}}])"));
  for (unsigned seed : {1u, 2u, 3u}) {
    const Streamed s = Stream(plan, ids, seed);
    EXPECT_EQ(s.content, "Let me look.\n");
    for (const auto& chunk : s.chunks) EXPECT_EQ(chunk.find('<'), std::string::npos) << "no part of a call is content";
    EXPECT_EQ(s.done.tool_calls, whole.tool_calls);
    EXPECT_EQ(s.done.finish_reason, "tool_calls");
  }
}

TEST(ToolCallsOutputTest, AForcedCallStreamsNoContent) {
  const std::string prefix = ForcedToolCallPrefix("get_weather");
  const auto ids = Encode("{\"city\": \"Bethlehem\"}}\n</tool_call>");
  const OutputPlan plan = ToolPlan(static_cast<std::int64_t>(ids.size()), "get_weather");
  const Streamed s = Stream(plan, ids, 7);
  EXPECT_EQ(s.content, "");
  ASSERT_EQ(s.done.tool_calls.size(), 1u);
  EXPECT_EQ(s.done.tool_calls[0]["function"]["arguments"], "{\"city\":\"Bethlehem\"}");
  // Rendered: content null beside the calls, and in the stream's last chunk each call indexed.
  const auto id = MakeIdentity(Endpoint::kChatCompletions, "j", 5, "m");
  const json r = CompletionResponse(id, {ChoiceText{s.done.text, s.done.finish_reason, nullptr, s.done.tool_calls}},
                                    Usage(9, 4), nullptr);
  EXPECT_TRUE(r["choices"][0]["message"]["content"].is_null());
  EXPECT_EQ(r["choices"][0]["message"]["tool_calls"], s.done.tool_calls);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
  const json last = LastDeltaChunk(id, "", s.done.tool_calls, "tool_calls", nullptr, 0, nullptr);
  const json& delta = last["choices"][0]["delta"];
  EXPECT_FALSE(delta.contains("content"));
  EXPECT_EQ(delta["tool_calls"][0]["index"], 0);
  EXPECT_EQ(delta["tool_calls"][0]["id"], "call_job-1_0");
  EXPECT_EQ(delta["tool_calls"][0]["function"]["name"], "get_weather");
}

TEST(ToolCallsOutputTest, OutputWithoutAWholeCallIsContent) {
  for (const std::string& answer : {std::string("The LORD is my shepherd; I shall not want."),
                                   std::string("Behold <tool_call> the lamb"), std::string("Amen <tool_ca")}) {
    SCOPED_TRACE(answer);
    const auto ids = Encode(answer);
    const OutputPlan plan = ToolPlan(static_cast<std::int64_t>(ids.size()));
    const auto whole = ChoiceOutput(plan).Finish(Completed(ids), "job-1");
    EXPECT_EQ(whole.text, answer);
    EXPECT_EQ(whole.finish_reason, "length");
    EXPECT_TRUE(whole.tool_calls.is_null());
    EXPECT_EQ(Stream(plan, ids, 5).content, answer);
  }
  // A forced opening the model did not complete: the opening and the output, as content.
  const auto ids = Encode("Jerusalem, I think");
  const OutputPlan forced = ToolPlan(static_cast<std::int64_t>(ids.size()), "required");
  const Streamed s = Stream(forced, ids, 9);
  EXPECT_EQ(s.content, ForcedToolCallPrefix("required") + "Jerusalem, I think");
  EXPECT_TRUE(s.done.tool_calls.is_null());
}

TEST(ToolCallsOutputTest, WithoutToolsACallShapedTextIsPlainContent) {
  const auto ids = Encode(kAnswer);
  OutputPlan plan = ToolPlan(static_cast<std::int64_t>(ids.size()), "none");
  EXPECT_FALSE(plan.tool_use.parse());
  const Streamed s = Stream(plan, ids, 3);
  EXPECT_EQ(s.content, kAnswer);
  EXPECT_TRUE(s.done.tool_calls.is_null());
  EXPECT_EQ(s.done.finish_reason, "length");
}

}  // namespace
}  // namespace unmask::scheduler::http
