// The OpenAI request parser: what each field becomes in the core's request, and a clear 400
// naming the field for bad input in every field.
#include "services/scheduler/http/openai_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "services/scheduler/http/http_errors.h"
#include "services/scheduler/request_validation.h"

namespace unmask::scheduler::http {
namespace {

using json = nlohmann::ordered_json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

json Chat() { return {{"model", "unmask-kjv"}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}}; }
json Completion() { return {{"model", "unmask-kjv"}, {"prompt", "In the beginning"}}; }

TEST(OpenAiRequestTest, ChatFieldsBecomeTheCoreRequest) {
  json body = Chat();
  body["messages"] = {{{"role", "developer"}, {"content", "Be brief."}},
                      {{"role", "user"}, {"content", "Hi"}},
                      {{"role", "assistant"}, {"content", nullptr}},
                      {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "What does "}}, {{"type", "text"}, {"text", "John 3:16 say?"}}}}}};
  body.update({{"max_tokens", 64}, {"steps", 32}, {"block_length", 16}, {"temperature", 0.5}, {"seed", 7},
               {"sampler", "dual_cache+threshold"}, {"threshold", 0.8}, {"factor", 2.0}, {"cfg_scale", 1.5},
               {"remasking", "random"}, {"priority", -3}, {"stop", "\n"}, {"n", 1}, {"user", "u-1"}, {"stream", true},
               {"stream_options", {{"include_usage", true}}}, {"top_p", 1}, {"logprobs", false}, {"unknown_field", 1}});
  auto r = ParseOpenAiRequest(Endpoint::kChatCompletions, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& g = r->generate;
  EXPECT_EQ(g.model(), "unmask-kjv");
  ASSERT_EQ(g.chat().messages_size(), 4);
  EXPECT_EQ(g.chat().messages(0).role(), "system");  // developer is OpenAI's newer name for it
  EXPECT_EQ(g.chat().messages(2).content(), "");
  EXPECT_EQ(g.chat().messages(3).content(), "What does John 3:16 say?");
  const auto& p = g.params();
  EXPECT_EQ(p.gen_length(), 64);
  EXPECT_EQ(p.steps(), 32);
  EXPECT_EQ(p.block_length(), 16);
  EXPECT_DOUBLE_EQ(p.temperature(), 0.5);
  EXPECT_EQ(p.seed(), 7u);
  EXPECT_EQ(p.sampler(), "dual_cache+threshold");
  EXPECT_DOUBLE_EQ(p.threshold(), 0.8);
  EXPECT_DOUBLE_EQ(p.factor(), 2.0);
  EXPECT_DOUBLE_EQ(p.cfg_scale(), 1.5);
  EXPECT_EQ(p.remasking(), v1::REMASKING_RANDOM);
  EXPECT_TRUE(p.stop_at_eos());
  EXPECT_EQ(g.priority(), -3);
  EXPECT_EQ(r->stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(r->user, "u-1");
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
}

TEST(OpenAiRequestTest, Llada2FieldsBecomeTheCoreRequest) {
  json body = Completion();
  body.update({{"sampler", "llada2"}, {"max_tokens", 100}, {"block_length", 32}, {"steps", 16}, {"temperature", 0.7},
               {"top_p", 0.9}, {"top_k", 40}, {"minimal_topk", 2}, {"eos_early_stop", true}, {"threshold", 0.8}});
  auto r = ParseOpenAiRequest(Endpoint::kCompletions, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();  // 32 need not divide 100 for llada2
  const auto& p = r->generate.params();
  EXPECT_EQ(p.sampler(), "llada2");
  EXPECT_DOUBLE_EQ(p.top_p(), 0.9);
  EXPECT_EQ(p.top_k(), 40);
  EXPECT_EQ(p.minimal_topk(), 2);
  EXPECT_TRUE(p.eos_early_stop());
  EXPECT_DOUBLE_EQ(p.threshold(), 0.8);
  // Without a sampler the model decides later: llada2's options pass here (an LLaDA2 model takes
  // them; another model refuses them then, by name).
  body.erase("sampler");
  body.erase("max_tokens");
  body.erase("block_length");
  EXPECT_TRUE(ParseOpenAiRequest(Endpoint::kCompletions, body).ok());
}

TEST(OpenAiRequestTest, UnsetAndNullFieldsLeaveTheCoreDefaults) {
  json body = Chat();
  body.update({{"max_tokens", nullptr}, {"stop", nullptr}, {"temperature", nullptr}, {"seed", nullptr},
               {"early_stop", nullptr}});
  auto r = ParseOpenAiRequest(Endpoint::kChatCompletions, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->generate.params().has_early_stop());
  EXPECT_FALSE(r->generate.params().has_gen_length());
  EXPECT_FALSE(r->generate.params().has_steps());
  EXPECT_FALSE(r->generate.params().has_block_length());
  EXPECT_TRUE(r->stop.empty());
  EXPECT_FALSE(r->stream);
}

TEST(OpenAiRequestTest, EarlyStopIsABooleanThatReachesTheCoreRequest) {
  for (bool value : {false, true}) {
    for (Endpoint endpoint : {Endpoint::kChatCompletions, Endpoint::kCompletions}) {
      json body = endpoint == Endpoint::kChatCompletions ? Chat() : Completion();
      body.update({{"early_stop", value}, {"sampler", "dual_cache"}});
      auto r = ParseOpenAiRequest(endpoint, body);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_TRUE(r->generate.params().has_early_stop());
      EXPECT_EQ(r->generate.params().early_stop(), value);
    }
  }
  auto absent = ParseOpenAiRequest(Endpoint::kCompletions, Completion());
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->generate.params().has_early_stop()) << "absent must stay unset (the default), not false";
}

TEST(OpenAiRequestTest, MaxCompletionTokensIsTheChatAliasOfMaxTokens) {
  json body = Chat();
  body["max_completion_tokens"] = 48;
  auto r = ParseOpenAiRequest(Endpoint::kChatCompletions, body);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->generate.params().gen_length(), 48);
}

TEST(OpenAiRequestTest, CompletionPromptIsTextOrTokenIds) {
  auto text = ParseOpenAiRequest(Endpoint::kCompletions, Completion());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->generate.text(), "In the beginning");

  json one = Completion();
  one["prompt"] = {"In the beginning"};
  auto single = ParseOpenAiRequest(Endpoint::kCompletions, one);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->generate.text(), "In the beginning");

  json ids = Completion();
  ids["prompt"] = {5, 6, 7};
  auto parsed = ParseOpenAiRequest(Endpoint::kCompletions, ids);
  ASSERT_TRUE(parsed.ok());
  EXPECT_THAT(std::vector<std::int64_t>(parsed->generate.ids().ids().begin(), parsed->generate.ids().ids().end()),
              ::testing::ElementsAre(5, 6, 7));

  json stops = Completion();
  stops["stop"] = {"\n", "Amen"};
  auto s = ParseOpenAiRequest(Endpoint::kCompletions, stops);
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(s->stop, ::testing::ElementsAre("\n", "Amen"));
}

struct BadCase {
  Endpoint endpoint;
  std::string patch;  // JSON merged into the valid body ("-key" removes key)
  std::string field;  // what the message starts with and param says
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.patch; }  // readable test names

class BadFieldTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadFieldTest, IsRefusedNamingTheField) {
  const BadCase& c = GetParam();
  json body = c.endpoint == Endpoint::kChatCompletions ? Chat() : Completion();
  if (c.patch[0] == '-') {
    body.erase(c.patch.substr(1));
  } else {
    body.update(json::parse(c.patch));
  }
  auto r = ParseOpenAiRequest(c.endpoint, body);
  ASSERT_FALSE(r.ok()) << c.patch;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), StartsWith(c.field + ":")) << c.patch;
  EXPECT_EQ(r.status().field(), c.field) << c.patch;  // the detail, set where the parser found it
  // The error object the client gets: 400 with the field as param.
  const HttpError e = ToHttpError(r.status());
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.body["error"]["param"], c.field) << e.body.dump();
  EXPECT_EQ(e.body["error"]["type"], "invalid_request_error");
}

constexpr auto kChat = Endpoint::kChatCompletions;
constexpr auto kText = Endpoint::kCompletions;

INSTANTIATE_TEST_SUITE_P(
    EveryField, BadFieldTest,
    ::testing::Values(
        BadCase{kChat, "-model", "model"}, BadCase{kChat, R"({"model": 5})", "model"},
        BadCase{kChat, R"({"model": ""})", "model"}, BadCase{kChat, "-messages", "messages"},
        BadCase{kChat, R"({"messages": []})", "messages"}, BadCase{kChat, R"({"messages": "Hi"})", "messages"},
        BadCase{kChat, R"({"messages": [5]})", "messages[0]"},
        BadCase{kChat, R"({"messages": [{"content": "Hi"}]})", "messages[0].role"},
        BadCase{kChat, R"({"messages": [{"role": "robot", "content": "Hi"}]})", "messages[0].role"},
        BadCase{kChat, R"({"messages": [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}, {"role": "user", "content": "c"}]})", "messages[1].role"},
        BadCase{kChat, R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]})", "messages[1].role"},
        BadCase{kChat, R"({"messages": [{"role": "user"}]})", "messages[0].content"},
        BadCase{kChat, R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
        BadCase{kChat, R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content[0]"},
        BadCase{kText, "-prompt", "prompt"}, BadCase{kText, R"({"prompt": ""})", "prompt"},
        BadCase{kText, R"({"prompt": {}})", "prompt"}, BadCase{kText, R"({"prompt": []})", "prompt"},
        BadCase{kText, R"({"prompt": [1, -2]})", "prompt[1]"}, BadCase{kText, R"({"prompt": [1, "a"]})", "prompt[1]"},
        BadCase{kChat, R"({"max_tokens": 0})", "max_tokens"}, BadCase{kChat, R"({"max_tokens": "64"})", "max_tokens"},
        BadCase{kText, R"({"max_tokens": 1000000})", "max_tokens"}, BadCase{kText, R"({"max_tokens": 1.5})", "max_tokens"},
        BadCase{kChat, R"({"max_tokens": 64, "max_completion_tokens": 32})", "max_completion_tokens"},
        BadCase{kChat, R"({"max_completion_tokens": -1})", "max_tokens"},
        BadCase{kText, R"({"steps": 0})", "steps"}, BadCase{kText, R"({"steps": "many"})", "steps"},
        BadCase{kText, R"({"block_length": -4})", "block_length"},
        // The generation library's rules over the whole (as every door's): fuzz/regressions. A
        // request that names no sampler is judged by the model's default later (llada2 takes
        // these lengths), so these name theirs.
        BadCase{kText, R"({"max_tokens": 16, "block_length": 8, "steps": 13, "sampler": "reference"})", "steps"},
        BadCase{kText, R"({"max_tokens": 16, "steps": 32, "sampler": "dual_cache"})", "steps"},
        BadCase{kChat, R"({"max_tokens": 16, "block_length": 5, "sampler": "reference"})", "block_length"},
        BadCase{kChat, R"({"max_tokens": 16, "block_length": 0, "sampler": "llada2"})", "block_length"},
        BadCase{kText, R"({"temperature": -0.1})", "temperature"}, BadCase{kText, R"({"temperature": "hot"})", "temperature"},
        BadCase{kText, R"({"temperature": 101})", "temperature"}, BadCase{kText, R"({"cfg_scale": -1})", "cfg_scale"},
        BadCase{kText, R"({"threshold": 0})", "threshold"}, BadCase{kText, R"({"threshold": 1.5})", "threshold"},
        BadCase{kText, R"({"factor": 0})", "factor"}, BadCase{kText, R"({"factor": "x"})", "factor"},
        BadCase{kText, R"({"seed": -1})", "seed"}, BadCase{kText, R"({"seed": 1.5})", "seed"},
        BadCase{kText, R"({"seed": "1"})", "seed"}, BadCase{kText, R"({"sampler": "fastest"})", "sampler"},
        BadCase{kText, R"({"sampler": 3})", "sampler"}, BadCase{kText, R"({"remasking": "lowest"})", "remasking"},
        BadCase{kText, R"({"priority": 11})", "priority"}, BadCase{kText, R"({"priority": "high"})", "priority"},
        BadCase{kText, R"({"n": 17})", "n"}, BadCase{kChat, R"({"n": 0})", "n"}, BadCase{kChat, R"({"n": "1"})", "n"},
        BadCase{kText, R"({"n": -1})", "n"}, BadCase{kChat, R"({"n": 2.5})", "n"}, BadCase{kText, R"({"n": [2]})", "n"},
        BadCase{kText, R"({"n": 18446744073709551615})", "n"},
        BadCase{kText, R"({"stop": 5})", "stop"}, BadCase{kText, R"({"stop": ""})", "stop"},
        BadCase{kText, R"({"stop": ["a", ""]})", "stop[1]"}, BadCase{kText, R"({"stop": ["a", "b", "c", "d", "e"]})", "stop"},
        BadCase{kText, R"({"user": 5})", "user"}, BadCase{kText, R"({"stream": "yes"})", "stream"},
        BadCase{kText, R"({"stream_options": 1})", "stream_options"},
        BadCase{kText, R"({"stream_options": {"include_usage": "yes"}})", "stream_options.include_usage"},
        BadCase{kText, R"({"early_stop": "false"})", "early_stop"}, BadCase{kChat, R"({"early_stop": 0})", "early_stop"},
        BadCase{kText, R"({"early_stop": 1})", "early_stop"}, BadCase{kChat, R"({"early_stop": [true]})", "early_stop"},
        BadCase{kChat, R"({"early_stop": {}})", "early_stop"},
        BadCase{kText, R"({"best_of": 3})", "best_of"}, BadCase{kText, R"({"n": 2, "best_of": 2})", "best_of"},
        BadCase{kText, R"({"top_p": 0})", "top_p"}, BadCase{kText, R"({"top_p": 1.5})", "top_p"},
        BadCase{kChat, R"({"top_p": "all"})", "top_p"}, BadCase{kText, R"({"sampler": "dual_cache", "top_p": 0.9})", "top_p"},
        BadCase{kText, R"({"top_k": -1})", "top_k"}, BadCase{kText, R"({"top_k": 2.5})", "top_k"},
        BadCase{kChat, R"({"minimal_topk": 0})", "minimal_topk"}, BadCase{kText, R"({"minimal_topk": "2"})", "minimal_topk"},
        BadCase{kText, R"({"max_tokens": 8, "minimal_topk": 9})", "minimal_topk"},
        BadCase{kChat, R"({"eos_early_stop": "yes"})", "eos_early_stop"},
        BadCase{kText, R"({"sampler": "reference", "eos_early_stop": true})", "eos_early_stop"},
        BadCase{kText, R"({"sampler": "llada2", "cfg_scale": 1})", "cfg_scale"},
        BadCase{kText, R"({"sampler": "llada2", "remasking": "random"})", "remasking"},
        BadCase{kText, R"({"presence_penalty": 0.5})", "presence_penalty"},
        BadCase{kChat, R"({"response_format": {"type": "json_object"}})", "response_format"}));

// Tool calling: every field of tools, tool_choice, parallel_tool_calls and the messages' tool
// calls and answers, each refusal naming its field as OpenAI's API spells it.
#define UNMASK_CALLED(calls) \
  R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "tool_calls": )" calls R"(}, {"role": "tool", "tool_call_id": "c1", "content": "b"}]})"
#define UNMASK_TOOLS(rest) R"({"tools": [{"type": "function", "function": {"name": "f"}}])" rest "}"
INSTANTIATE_TEST_SUITE_P(
    Tools, BadFieldTest,
    ::testing::Values(
        BadCase{kChat, UNMASK_CALLED("5"), "messages[1].tool_calls"},
        BadCase{kChat, UNMASK_CALLED("[5]"), "messages[1].tool_calls[0]"},
        BadCase{kChat, UNMASK_CALLED(R"([{"type": "function", "function": {"name": "f", "arguments": "{}"}}])"), "messages[1].tool_calls[0].id"},
        BadCase{kChat, UNMASK_CALLED(R"([{"id": 5, "type": "function", "function": {"name": "f", "arguments": "{}"}}])"), "messages[1].tool_calls[0].id"},
        BadCase{kChat, UNMASK_CALLED(R"([{"id": "c1", "type": "code", "function": {"name": "f", "arguments": "{}"}}])"), "messages[1].tool_calls[0].type"},
        BadCase{kChat, UNMASK_CALLED(R"([{"id": "c1", "type": "function"}])"), "messages[1].tool_calls[0].function"},
        BadCase{kChat, UNMASK_CALLED(R"([{"id": "c1", "function": {"arguments": "{}"}}])"), "messages[1].tool_calls[0].function.name"},
        BadCase{kChat, UNMASK_CALLED(R"([{"id": "c1", "function": {"name": "a b", "arguments": "{}"}}])"), "messages[1].tool_calls[0].function.name"},
        BadCase{kChat, UNMASK_CALLED(R"([{"id": "c1", "function": {"name": "f"}}])"), "messages[1].tool_calls[0].function.arguments"},
        BadCase{kChat, UNMASK_CALLED(R"([{"id": "c1", "function": {"name": "f", "arguments": "[1]"}}])"), "messages[1].tool_calls[0].function.arguments"},
        BadCase{kChat, UNMASK_CALLED(R"([{"id": "c1", "function": {"name": "f", "arguments": "{\"x\": "}}])"), "messages[1].tool_calls[0].function.arguments"},
        BadCase{kChat, UNMASK_CALLED(R"([{"id": "c1", "function": {"name": "f", "arguments": 5}}])"), "messages[1].tool_calls[0].function.arguments"},
        BadCase{kChat, R"({"messages": [{"role": "user", "content": "a", "tool_calls": []}]})", "messages[0].tool_calls"},
        BadCase{kChat, R"({"messages": [{"role": "user", "content": "a", "tool_call_id": "c1"}]})", "messages[0].tool_call_id"},
        BadCase{kChat, R"({"messages": [{"role": "tool", "content": "Hi"}]})", "messages[0].tool_call_id"},
        BadCase{kChat, R"({"messages": [{"role": "tool", "content": "Hi", "tool_call_id": 5}]})", "messages[0].tool_call_id"},
        BadCase{kChat, R"({"messages": [{"role": "tool", "tool_call_id": "c1"}]})", "messages[0].content"},
        BadCase{kChat, R"({"tools": "f"})", "tools"}, BadCase{kChat, R"({"tools": [5]})", "tools[0]"},
        BadCase{kChat, R"({"tools": [{"type": "code"}]})", "tools[0]"},
        BadCase{kChat, R"({"tools": [{"type": "function"}]})", "tools[0].function"},
        BadCase{kChat, R"({"tools": [{"type": "function", "function": {}}]})", "tools[0].function.name"},
        BadCase{kChat, R"({"tools": [{"type": "function", "function": {"name": "a b"}}]})", "tools[0].function.name"},
        BadCase{kChat, R"({"tools": [{"type": "function", "function": {"name": 5}}]})", "tools[0].function.name"},
        BadCase{kChat, R"({"tools": [{"type": "function", "function": {"name": "f", "description": 5}}]})", "tools[0].function.description"},
        BadCase{kChat, R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": "object"}}]})", "tools[0].function.parameters"},
        BadCase{kChat, R"({"tools": [{"type": "function", "function": {"name": "f", "strict": "yes"}}]})", "tools[0].function.strict"},
        BadCase{kChat, R"({"tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}]})", "tools[1].function.name"},
        BadCase{kChat, UNMASK_TOOLS(R"(, "tool_choice": "always")"), "tool_choice"},
        BadCase{kChat, UNMASK_TOOLS(R"(, "tool_choice": 5)"), "tool_choice"},
        BadCase{kChat, UNMASK_TOOLS(R"(, "tool_choice": {"type": "function"})"), "tool_choice"},
        BadCase{kChat, UNMASK_TOOLS(R"(, "tool_choice": {"type": "function", "function": {"name": "g"}})"), "tool_choice.function.name"},
        BadCase{kChat, R"({"tool_choice": "required"})", "tool_choice"},
        BadCase{kChat, UNMASK_TOOLS(R"(, "parallel_tool_calls": "no")"), "parallel_tool_calls"},
        BadCase{kChat, UNMASK_TOOLS(R"(, "template": "<hole:4>")"), "tools"},
        BadCase{kText, R"({"tools": [{"type": "function", "function": {"name": "f"}}]})", "tools"},
        BadCase{kText, R"({"tool_choice": "auto"})", "tool_choice"},
        BadCase{kChat, R"({"functions": [{"name": "f"}]})", "functions"},
        BadCase{kChat, R"({"function_call": "auto"})", "function_call"}));
#undef UNMASK_CALLED
#undef UNMASK_TOOLS

TEST(OpenAiRequestTest, ToolsToolCallsAndAnswersReachTheCoreRequestAsWritten) {
  json body = json::parse(R"({"model": "m", "messages": [
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "tool_calls": [
          {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}},
          {"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": {"zone": "CET"}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
      {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "noon"}]}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
               "strict": true}},
              {"type": "function", "function": {"name": "get_time"}}],
    "tool_choice": {"type": "function", "function": {"name": "get_time"}},
    "parallel_tool_calls": false})");
  auto r = ParseOpenAiRequest(Endpoint::kChatCompletions, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const v1::ChatMessages& chat = r->generate.chat();
  ASSERT_EQ(chat.messages_size(), 4);
  EXPECT_EQ(chat.messages(1).content(), "");
  ASSERT_EQ(chat.messages(1).tool_calls_size(), 2);
  EXPECT_EQ(chat.messages(1).tool_calls(0).arguments(), "{\"city\": \"Rome\"}");  // the text as sent
  EXPECT_EQ(chat.messages(1).tool_calls(1).arguments(), "{\"zone\":\"CET\"}");    // an object, as text
  EXPECT_EQ(chat.messages(3).tool_call_id(), "c2");
  EXPECT_EQ(chat.messages(3).content(), "noon");
  ASSERT_EQ(chat.tools_size(), 2);
  EXPECT_EQ(chat.tools(0).description(), "Weather");
  // The schema keeps the client's order (the template renders it as transformers would).
  EXPECT_EQ(chat.tools(0).parameters(),
            R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");
  EXPECT_EQ(chat.tools(1).parameters(), "");
  EXPECT_EQ(chat.tool_choice(), "get_time");
  EXPECT_TRUE(chat.single_tool_call());
  for (const char* choice : {"auto", "none", "required"}) {
    body["tool_choice"] = choice;
    auto c = ParseOpenAiRequest(Endpoint::kChatCompletions, body);
    ASSERT_TRUE(c.ok()) << choice;
    EXPECT_EQ(c->generate.chat().tool_choice(), choice);
  }
}

// Issue 31: suffix, echo, template, logprobs / top_logprobs, each refusal naming its field.
INSTANTIATE_TEST_SUITE_P(
    InfillTemplatesLogprobs, BadFieldTest,
    ::testing::Values(
        BadCase{kText, R"({"logprobs": 21})", "logprobs"}, BadCase{kText, R"({"logprobs": -1})", "logprobs"},
        BadCase{kText, R"({"logprobs": 2.5})", "logprobs"}, BadCase{kText, R"({"logprobs": true})", "logprobs"},
        BadCase{kText, R"({"logprobs": "3"})", "logprobs"}, BadCase{kText, R"({"top_logprobs": 3})", "top_logprobs"},
        BadCase{kText, R"({"logprobs": 2, "top_logprobs": 2})", "top_logprobs"},
        BadCase{kChat, R"({"logprobs": 1})", "logprobs"}, BadCase{kChat, R"({"logprobs": "yes"})", "logprobs"},
        BadCase{kChat, R"({"top_logprobs": 3})", "top_logprobs"},
        BadCase{kChat, R"({"logprobs": false, "top_logprobs": 2})", "top_logprobs"},
        BadCase{kChat, R"({"logprobs": true, "top_logprobs": 21})", "top_logprobs"},
        BadCase{kChat, R"({"logprobs": true, "top_logprobs": -1})", "top_logprobs"},
        BadCase{kChat, R"({"logprobs": true, "top_logprobs": "2"})", "top_logprobs"},
        BadCase{kChat, R"({"logprobs": true, "top_logprobs": 1.5})", "top_logprobs"},
        BadCase{kText, R"({"suffix": 5})", "suffix"}, BadCase{kText, R"({"suffix": ["end"]})", "suffix"},
        BadCase{kChat, R"({"suffix": "end"})", "suffix"},
        BadCase{kText, R"({"echo": "yes"})", "echo"}, BadCase{kText, R"({"echo": 1})", "echo"},
        // max_tokens 0 is the prompt scored alone: only with echo and logprobs, no suffix or template.
        BadCase{kText, R"({"max_tokens": 0})", "max_tokens"},
        BadCase{kText, R"({"max_tokens": 0, "echo": true})", "max_tokens"},
        BadCase{kText, R"({"max_tokens": 0, "logprobs": 1})", "max_tokens"},
        BadCase{kText, R"({"max_tokens": 0, "echo": true, "logprobs": 1, "suffix": " end"})", "max_tokens"},
        BadCase{kText, R"({"max_tokens": 0, "echo": true, "logprobs": 1, "template": "a <hole:2>"})", "max_tokens"},
        BadCase{kText, R"({"max_tokens": 0, "echo": true, "logprobs": 1, "steps": 4})", "steps"},
        BadCase{kText, R"({"max_tokens": 0, "echo": true, "logprobs": 1, "block_length": 4})", "block_length"},
        BadCase{kText, R"({"max_tokens": 0, "echo": true, "logprobs": 1, "n": 2})", "n"},
        BadCase{kChat, R"({"max_tokens": 0, "logprobs": true})", "max_tokens"},
        BadCase{kChat, R"({"echo": true})", "echo"},
        BadCase{kText, R"({"template": 5})", "template"}, BadCase{kText, R"({"template": ""})", "template"},
        BadCase{kChat, R"({"template": ["A <hole:2>"]})", "template"},
        BadCase{kText, R"({"template": "A <hole:3>.", "stop": "x"})", "stop"},
        BadCase{kChat, R"({"template": "A <hole:3>.", "stop": ["x"]})", "stop"},
        // With max_tokens the lengths are judged here as ever (the core then requires it to equal
        // the template's length).
        BadCase{kText, R"({"template": "A <hole:3>.", "max_tokens": 8, "steps": 9, "sampler": "reference"})", "steps"}));

TEST(OpenAiRequestTest, CompletionsSuffixEchoLogprobsAndTemplateReachTheCoreRequest) {
  json body = Completion();
  body.update({{"suffix", " and the earth."}, {"echo", true}, {"logprobs", 3}, {"max_tokens", 16}});
  auto r = ParseOpenAiRequest(Endpoint::kCompletions, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->generate.suffix(), " and the earth.");
  EXPECT_TRUE(r->echo);
  EXPECT_EQ(r->logprobs, 3);
  ASSERT_TRUE(r->generate.params().has_logprobs());
  EXPECT_EQ(r->generate.params().logprobs(), 3);
  ASSERT_TRUE(r->generate.params().has_prompt_logprobs()) << "the echoed prompt is scored too";
  EXPECT_EQ(r->generate.params().prompt_logprobs(), 3);
  EXPECT_TRUE(r->generate.template_text().empty());

  // logprobs 0: the chosen tokens' logprobs, no alternatives; null: none; echo false: none.
  body.update({{"logprobs", 0}, {"echo", false}});
  r = ParseOpenAiRequest(Endpoint::kCompletions, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->generate.params().logprobs(), 0);
  EXPECT_FALSE(r->echo);
  EXPECT_FALSE(r->generate.params().has_prompt_logprobs()) << "no echo, no prompt to score";
  body["echo"] = true;
  body["logprobs"] = nullptr;
  r = ParseOpenAiRequest(Endpoint::kCompletions, body);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->generate.params().has_prompt_logprobs()) << "echo without logprobs scores nothing";
  body["echo"] = false;
  body["logprobs"] = nullptr;
  r = ParseOpenAiRequest(Endpoint::kCompletions, body);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->generate.params().has_logprobs());
  EXPECT_EQ(r->logprobs, -1);
  body["logprobs"] = 20;
  EXPECT_TRUE(ParseOpenAiRequest(Endpoint::kCompletions, body).ok());

  // max_tokens 0 with echo and logprobs: the prompt alone, scored (params.score_only: the job
  // generates nothing, so it sets no length and asks no generated token's logprobs).
  json scoring = Completion();
  scoring.update({{"echo", true}, {"logprobs", 1}, {"max_tokens", 0}});
  r = ParseOpenAiRequest(Endpoint::kCompletions, scoring);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->score_only);
  EXPECT_TRUE(r->generate.params().score_only());
  EXPECT_FALSE(r->generate.params().has_gen_length());
  EXPECT_FALSE(r->generate.params().has_logprobs());
  EXPECT_EQ(r->logprobs, 1) << "the echoed prompt's tokens are rendered with 1 alternative";
  EXPECT_EQ(r->generate.params().prompt_logprobs(), 1);
  EXPECT_TRUE(ValidateGenerateRequest(r->generate).ok()) << "the core takes what the HTTP API accepts";
  scoring["max_tokens"] = 1;
  r = ParseOpenAiRequest(Endpoint::kCompletions, scoring);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->score_only);

  // A template: gen_length is the core's to set, so steps are not judged against the default
  // 128 here (the template may be longer).
  json t = Completion();
  t.update({{"template", "In the <hole:4> God created <<hole:1> <hole:200>."}, {"steps", 200}});
  r = ParseOpenAiRequest(Endpoint::kCompletions, t);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->generate.template_text(), "In the <hole:4> God created <<hole:1> <hole:200>.");
  EXPECT_FALSE(r->generate.params().has_gen_length());
  EXPECT_EQ(r->generate.params().steps(), 200);
  EXPECT_TRUE(r->generate.params().stop_at_eos());
}

TEST(OpenAiRequestTest, ChatLogprobsAndTopLogprobsFollowOpenAisRule) {
  json body = Chat();
  body["logprobs"] = true;
  auto r = ParseOpenAiRequest(Endpoint::kChatCompletions, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->generate.params().logprobs(), 0);  // the chosen tokens only
  body["top_logprobs"] = 5;
  r = ParseOpenAiRequest(Endpoint::kChatCompletions, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->generate.params().logprobs(), 5);
  EXPECT_EQ(r->logprobs, 5);
  body.update({{"logprobs", false}, {"top_logprobs", nullptr}});
  r = ParseOpenAiRequest(Endpoint::kChatCompletions, body);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->generate.params().has_logprobs());
  // What asks for nothing passes on chat as it always did; a template is the assistant's answer.
  body.update({{"echo", false}, {"suffix", ""}, {"template", "Verily, <hole:6>."}});
  r = ParseOpenAiRequest(Endpoint::kChatCompletions, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->echo);
  EXPECT_TRUE(r->generate.suffix().empty());
  EXPECT_EQ(r->generate.template_text(), "Verily, <hole:6>.");
  EXPECT_EQ(r->generate.chat().messages_size(), 1);
}

TEST(OpenAiRequestTest, NIsTheNumberOfChoicesAndOneLeavesTheRequestAsItWas) {
  json body = Completion();
  body["n"] = 3;
  auto three = ParseOpenAiRequest(Endpoint::kCompletions, body);
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_EQ(three->generate.n(), 3);
  body["n"] = kMaxChoices;
  auto most = ParseOpenAiRequest(Endpoint::kCompletions, body);
  ASSERT_TRUE(most.ok()) << most.status().ToString();
  EXPECT_EQ(most->generate.n(), 16);
  // 1, null or absent: the single-choice request, unchanged on the wire.
  for (const json& n : {json(1), json(nullptr)}) {
    body["n"] = n;
    auto one = ParseOpenAiRequest(Endpoint::kCompletions, body);
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    EXPECT_EQ(one->generate.n(), 0) << n;
  }
  body["n"] = 17;
  auto over = ParseOpenAiRequest(Endpoint::kCompletions, body);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().field(), "n");
  EXPECT_THAT(over.status().message(), StartsWith("n: must be an integer in [1, 16], got 17"));
  EXPECT_EQ(ToHttpError(over.status()).body["error"]["param"], "n");
}

TEST(OpenAiRequestTest, UserOfMoreThanTheLimitIsRefused) {
  json body = Completion();
  body["user"] = std::string(kMaxUserBytes + 1, 'u');
  auto r = ParseOpenAiRequest(Endpoint::kCompletions, body);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), StartsWith("user: must be at most 256 bytes"));
}

TEST(OpenAiRequestTest, TheBodyMustBeAJsonObject) {
  auto bad = ParseJsonBody("{\"model\": ");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("not valid JSON"));
  auto array = ParseJsonBody("[1, 2]");
  ASSERT_FALSE(array.ok());
  EXPECT_THAT(array.status().message(), StartsWith("body: must be a JSON object"));
  auto ok = ParseJsonBody(R"({"model": "m"})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)["model"], "m");
}

// unmask's likelihood extension (openai_likelihood.h): a text prompt with its continuation, or
// token ids with the continuation's count, reach the core request; nothing to generate is set.
TEST(OpenAiRequestTest, LikelihoodReachesTheCoreRequestAndSetsNoLength) {
  json body = Completion();
  body.update({{"likelihood", {{"continuation", " God created"}, {"mc_num", 32}, {"batch_size", 8},
                               {"rows_per_forward", 4}, {"check_greedy", true}}},
               {"seed", 4}, {"cfg_scale", 0.5}, {"max_tokens", 0}});
  auto r = ParseOpenAiRequest(Endpoint::kCompletions, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->likelihood);
  EXPECT_FALSE(r->score_only);
  EXPECT_EQ(r->generate.continuation(), " God created");
  const v1::GenerationParams& p = r->generate.params();
  ASSERT_TRUE(p.has_likelihood());
  EXPECT_EQ(p.likelihood().continuation_tokens(), 0) << "the core counts them";
  EXPECT_EQ(p.likelihood().mc_num(), 32);
  EXPECT_EQ(p.likelihood().batch_size(), 8);
  EXPECT_EQ(p.likelihood().rows_per_forward(), 4);
  EXPECT_TRUE(p.likelihood().check_greedy());
  EXPECT_FALSE(p.has_gen_length());
  EXPECT_EQ(p.seed(), 4u);

  body = {{"model", "m"}, {"prompt", {1, 2, 3, 4}}, {"likelihood", {{"continuation_tokens", 2}}}};
  r = ParseOpenAiRequest(Endpoint::kCompletions, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->generate.params().likelihood().continuation_tokens(), 2);
  EXPECT_EQ(r->generate.params().likelihood().mc_num(), 0) << "the default: 128";
  EXPECT_TRUE(r->generate.continuation().empty());
}

// vLLM's prompt_logprobs on both endpoints: the prompt's tokens scored with k alternatives; with
// completions' echo and logprobs the job takes the larger count (each output keeps its own).
TEST(OpenAiRequestTest, VllmPromptLogprobsScoreThePromptOnBothEndpoints) {
  json body = Chat();
  body["prompt_logprobs"] = 2;
  auto r = ParseOpenAiRequest(Endpoint::kChatCompletions, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->prompt_logprobs, 2);
  EXPECT_EQ(r->generate.params().prompt_logprobs(), 2);
  EXPECT_EQ(r->logprobs, -1);

  body = Completion();
  body.update({{"prompt_logprobs", 0}});
  r = ParseOpenAiRequest(Endpoint::kCompletions, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->prompt_logprobs, 0);
  EXPECT_EQ(r->generate.params().prompt_logprobs(), 0);

  body.update({{"echo", true}, {"logprobs", 3}, {"prompt_logprobs", 1}});
  r = ParseOpenAiRequest(Endpoint::kCompletions, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->prompt_logprobs, 1);
  EXPECT_EQ(r->logprobs, 3);
  EXPECT_EQ(r->generate.params().prompt_logprobs(), 3) << "the larger of the two";

  body = Completion();
  r = ParseOpenAiRequest(Endpoint::kCompletions, body);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prompt_logprobs, -1);
  EXPECT_FALSE(r->generate.params().has_prompt_logprobs());
}

INSTANTIATE_TEST_SUITE_P(
    PromptLogprobs, BadFieldTest,
    ::testing::Values(BadCase{kText, R"({"prompt_logprobs": -1})", "prompt_logprobs"},
                      BadCase{kText, R"({"prompt_logprobs": 21})", "prompt_logprobs"},
                      BadCase{kText, R"({"prompt_logprobs": "2"})", "prompt_logprobs"},
                      BadCase{kChat, R"({"prompt_logprobs": true})", "prompt_logprobs"},
                      BadCase{kChat, R"({"prompt_logprobs": 1.5})", "prompt_logprobs"},
                      BadCase{kChat, R"({"prompt_logprobs": 1, "stream": true})", "prompt_logprobs"},
                      BadCase{kText, R"({"prompt_logprobs": 1, "stream": true})", "prompt_logprobs"}));

INSTANTIATE_TEST_SUITE_P(
    Likelihood, BadFieldTest,
    ::testing::Values(
        BadCase{kText, R"({"likelihood": 5})", "likelihood"},
        BadCase{kText, R"({"likelihood": {}})", "likelihood.continuation"},
        BadCase{kText, R"({"likelihood": {"continuation": 5}})", "likelihood.continuation"},
        BadCase{kText, R"({"likelihood": {"continuation": ""}})", "likelihood.continuation"},
        BadCase{kText, R"({"likelihood": {"continuation": " x", "continuation_tokens": 2}})", "likelihood.continuation_tokens"},
        BadCase{kText, R"({"prompt": [1, 2], "likelihood": {"continuation": " x"}})", "likelihood.continuation"},
        BadCase{kText, R"({"prompt": [1, 2], "likelihood": {"mc_num": 4}})", "likelihood.continuation_tokens"},
        BadCase{kText, R"({"prompt": [1, 2], "likelihood": {"continuation_tokens": 0}})", "likelihood.continuation_tokens"},
        BadCase{kText, R"({"likelihood": {"continuation": " x", "mc_num": 0}})", "likelihood.mc_num"},
        BadCase{kText, R"({"likelihood": {"continuation": " x", "mc_num": 70000}})", "likelihood.mc_num"},
        BadCase{kText, R"({"likelihood": {"continuation": " x", "mc_num": 8, "batch_size": 3}})", "likelihood.batch_size"},
        BadCase{kText, R"({"likelihood": {"continuation": " x", "batch_size": -1}})", "likelihood.batch_size"},
        BadCase{kText, R"({"likelihood": {"continuation": " x", "rows_per_forward": 0}})", "likelihood.rows_per_forward"},
        BadCase{kText, R"({"likelihood": {"continuation": " x", "rows_per_forward": "4"}})", "likelihood.rows_per_forward"},
        BadCase{kText, R"({"likelihood": {"continuation": " x", "check_greedy": 1}})", "likelihood.check_greedy"},
        BadCase{kText, R"({"likelihood": {"continuation": " x", "samples": 8}})", "likelihood.samples"},
        BadCase{kText, R"({"likelihood": {"continuation": " x"}, "max_tokens": 8})", "max_tokens"},
        BadCase{kText, R"({"likelihood": {"continuation": " x"}, "echo": true})", "echo"},
        BadCase{kText, R"({"likelihood": {"continuation": " x"}, "logprobs": 0})", "logprobs"},
        BadCase{kText, R"({"likelihood": {"continuation": " x"}, "stream": true})", "stream"},
        BadCase{kText, R"({"likelihood": {"continuation": " x"}, "stop": "\n"})", "stop"},
        BadCase{kText, R"({"likelihood": {"continuation": " x"}, "suffix": " y"})", "suffix"},
        BadCase{kText, R"({"likelihood": {"continuation": " x"}, "template": "<hole:2>"})", "template"},
        BadCase{kText, R"({"likelihood": {"continuation": " x"}, "steps": 4})", "steps"},
        BadCase{kText, R"({"likelihood": {"continuation": " x"}, "n": 2})", "n"},
        BadCase{kChat, R"({"likelihood": {"continuation": " x"}})", "likelihood"}));

}  // namespace
}  // namespace unmask::scheduler::http
