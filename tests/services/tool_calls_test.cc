// Tool calling in chat, below the APIs: the calls read from a model's output (tool_calls.h), the
// gRPC request's tool fields validated (every field, bad input named), and the chat prompt
// (chat_prompt.h) rendered with tools by the test checkpoints' own templates (Ling-2.0's in
// tiny-llada2-grouped, Qwen2.5's in tiny-dream-tied) and refused for unmask-kjv, whose template
// (Llama-3's) has no place for tools.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "services/scheduler/chat_prompt.h"
#include "services/scheduler/request_validation.h"
#include "services/scheduler/tool_calls.h"

namespace unmask::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;

constexpr char kCalls[] =
    "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n"
    "<tool_call>\n{\"name\": \"no_args\"}\n</tool_call>";

std::vector<std::string> Names(const ParsedToolCalls& p) {
  std::vector<std::string> out;
  for (const auto& c : p.calls) out.push_back(c.name() + " " + c.arguments());
  return out;
}

TEST(ToolCalls, EachCallIsReadWithTheTextBeforeTheFirst) {
  const ParsedToolCalls p = ParseToolCalls(kCalls);
  EXPECT_EQ(p.content, "Let me look.\n");
  EXPECT_THAT(Names(p), ElementsAre("get_weather {\"city\":\"Paris\",\"days\":2}", "no_args {}"));
  // Arguments as a string holding the object (some models write them so), and a last call the
  // output ran out before closing, whose JSON is whole.
  const ParsedToolCalls s = ParseToolCalls("<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": [1]}\"}");
  EXPECT_EQ(s.content, "");
  EXPECT_THAT(Names(s), ElementsAre("f {\"x\":[1]}"));
}

TEST(ToolCalls, OutputThatIsNotACallIsText) {
  for (const std::string& text : {
           std::string("no call here"),
           std::string("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1\n</tool_call>"),  // not JSON
           std::string("<tool_call>{\"arguments\": {}}</tool_call>"),                               // no name
           std::string("<tool_call>{\"name\": 3}</tool_call>"),                                     // not a string
           std::string("<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>"),            // not an object
           std::string("<tool_call>{\"name\": \"f\", \"arguments\": {\"x\"</tool_call>"),          // cut short
           std::string("<tool_call>[\"f\"]</tool_call>"),
           std::string(kCalls) + "<tool_call>oops</tool_call>",  // one bad call: none is taken
       }) {
    SCOPED_TRACE(text);
    const ParsedToolCalls p = ParseToolCalls(text);
    EXPECT_TRUE(p.calls.empty());
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCalls, StreamingHoldsBackWhatMayBeginACall) {
  EXPECT_EQ(ToolCallStart(""), 0u);
  EXPECT_EQ(ToolCallStart("abc"), 3u);
  EXPECT_EQ(ToolCallStart("abc<"), 3u);
  EXPECT_EQ(ToolCallStart("abc<tool_ca"), 3u);
  EXPECT_EQ(ToolCallStart("abc<tool_call>{\"na"), 3u);
  EXPECT_EQ(ToolCallStart("a<b"), 3u);
  EXPECT_EQ(ToolCallStart("a<t<tool"), 3u);
  EXPECT_EQ(ToolCallStart("x <tool_call> y <tool_call>"), 2u);
}

TEST(ToolCalls, ToolChoiceForcesTheOpeningOfACall) {
  for (const char* choice : {"", "auto", "none"}) EXPECT_EQ(ForcedToolCallPrefix(choice), "") << choice;
  EXPECT_EQ(ForcedToolCallPrefix("required"), "<tool_call>\n{\"name\": \"");
  EXPECT_EQ(ForcedToolCallPrefix("get_weather"), "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ");
  // What the model writes after a forced opening completes the call.
  v1::ToolUse use;
  use.set_parse(true);
  use.set_forced_prefix(ForcedToolCallPrefix("get_weather"));
  const ParsedToolCalls named = ReadToolCalls(use, "job-7", "{\"city\": \"Rome\"}}\n</tool_call>");
  ASSERT_EQ(named.calls.size(), 1u);
  EXPECT_EQ(named.calls[0].id(), "call_job-7_0");
  EXPECT_EQ(named.calls[0].name(), "get_weather");
  EXPECT_EQ(named.calls[0].arguments(), "{\"city\":\"Rome\"}");
  // A forced opening the model did not complete: the answer is text, the opening first.
  const ParsedToolCalls broken = ReadToolCalls(use, "job-7", "Rome, I think");
  EXPECT_TRUE(broken.calls.empty());
  EXPECT_EQ(broken.content, use.forced_prefix() + "Rome, I think");
}

TEST(ToolCalls, IdsFollowTheJobAndSingleKeepsTheFirst) {
  v1::ToolUse use;
  EXPECT_TRUE(ReadToolCalls(use, "j", kCalls).calls.empty());  // not a chat with tools
  use.set_parse(true);
  const ParsedToolCalls all = ReadToolCalls(use, "j", kCalls);
  ASSERT_EQ(all.calls.size(), 2u);
  EXPECT_EQ(all.calls[0].id(), "call_j_0");
  EXPECT_EQ(all.calls[1].id(), "call_j_1");
  use.set_single(true);
  EXPECT_THAT(Names(ReadToolCalls(use, "j", kCalls)), ElementsAre("get_weather {\"city\":\"Paris\",\"days\":2}"));
}

TEST(ToolCalls, ToolUseFollowsToolsAndToolChoice) {
  v1::ChatMessages chat;
  EXPECT_FALSE(ToolUseOf(chat).parse());
  chat.add_tools()->set_name("f");
  EXPECT_TRUE(ToolUseOf(chat).parse());
  EXPECT_EQ(ToolUseOf(chat).forced_prefix(), "");
  chat.set_tool_choice("none");
  EXPECT_FALSE(ToolUseOf(chat).parse());
  chat.set_tool_choice("f");
  chat.set_single_tool_call(true);
  EXPECT_EQ(ToolUseOf(chat).forced_prefix(), ForcedToolCallPrefix("f"));
  EXPECT_TRUE(ToolUseOf(chat).single());
}

v1::GenerateRequest ToolChat() {
  v1::GenerateRequest r;
  r.set_model("m");
  auto* chat = r.mutable_chat();
  auto* user = chat->add_messages();
  user->set_role("user");
  user->set_content("Weather in Paris?");
  auto* assistant = chat->add_messages();
  assistant->set_role("assistant");
  auto* call = assistant->add_tool_calls();
  call->set_id("c1");
  call->set_name("get_weather");
  call->set_arguments("{\"city\": \"Paris\"}");
  auto* tool = chat->add_messages();
  tool->set_role("tool");
  tool->set_content("{\"temp\": 21}");
  tool->set_tool_call_id("c1");
  auto* t = chat->add_tools();
  t->set_name("get_weather");
  t->set_description("The weather in a city");
  t->set_parameters(R"({"type": "object", "properties": {"city": {"type": "string"}}})");
  return r;
}

TEST(ToolRequestValidation, AConversationWithToolsPasses) {
  v1::GenerateRequest r = ToolChat();
  EXPECT_TRUE(ValidateGenerateRequest(r).ok()) << ValidateGenerateRequest(r).ToString();
  for (const char* choice : {"auto", "none", "required", "get_weather"}) {
    r.mutable_chat()->set_tool_choice(choice);
    EXPECT_TRUE(ValidateGenerateRequest(r).ok()) << choice;
  }
}

TEST(ToolRequestValidation, EveryBadToolFieldIsNamed) {
  struct Case {
    std::function<void(v1::ChatMessages&)> edit;
    const char* field;
    const char* says;
  } cases[] = {
      {[](auto& c) { c.mutable_messages(1)->mutable_tool_calls(0)->set_id(""); }, "chat.messages[1].tool_calls[0].id", "must not be empty"},
      {[](auto& c) { c.mutable_messages(1)->mutable_tool_calls(0)->set_name("get weather"); }, "chat.messages[1].tool_calls[0].name", "1-64 of a-z"},
      {[](auto& c) { c.mutable_messages(1)->mutable_tool_calls(0)->set_name(std::string(65, 'f')); }, "chat.messages[1].tool_calls[0].name", "1-64"},
      {[](auto& c) { c.mutable_messages(1)->mutable_tool_calls(0)->set_arguments("[1]"); }, "chat.messages[1].tool_calls[0].arguments", "must be a JSON object"},
      {[](auto& c) { c.mutable_messages(1)->mutable_tool_calls(0)->set_arguments("{\"city\": "); }, "chat.messages[1].tool_calls[0].arguments", "must be a JSON object"},
      {[](auto& c) { *c.mutable_messages(0)->add_tool_calls() = c.messages(1).tool_calls(0); }, "chat.messages[0].tool_calls", "only an assistant message"},
      {[](auto& c) { c.mutable_messages(2)->clear_tool_call_id(); }, "chat.messages[2].tool_call_id", "must name the call it answers"},
      {[](auto& c) { c.mutable_messages(0)->set_tool_call_id("c1"); }, "chat.messages[0].tool_call_id", "only a tool message"},
      {[](auto& c) { c.mutable_messages(2)->set_tool_call_id("c9"); }, "chat.messages[2].tool_call_id", "must be the id of a call the last assistant message before it made"},
      {[](auto& c) { c.mutable_messages(1)->set_role("user"); c.mutable_messages(1)->clear_tool_calls(); }, "chat.messages[2].tool_call_id", "must be the id of a call"},
      {[](auto& c) { c.mutable_messages(2)->set_role("function"); }, "chat.messages[2].role", "must be system, user, assistant or tool"},
      {[](auto& c) { c.mutable_messages()->RemoveLast(); }, "chat.messages", "must end with a user message or a tool's answer"},
      {[](auto& c) { c.mutable_tools(0)->set_name(""); }, "chat.tools[0].name", "1-64 of a-z"},
      {[](auto& c) { *c.add_tools() = c.tools(0); }, "chat.tools[1].name", "must differ from every other tool's"},
      {[](auto& c) { c.mutable_tools(0)->set_parameters("\"object\""); }, "chat.tools[0].parameters", "must be a JSON Schema object"},
      {[](auto& c) { for (int i = 0; i < 128; ++i) c.add_tools()->set_name("t" + std::to_string(i)); }, "chat.tools", "at most 128 tools"},
      {[](auto& c) { c.set_tool_choice("get_time"); }, "chat.tool_choice", "must be auto, none, required or the name of one of the tools"},
      {[](auto& c) { c.clear_tools(); c.set_tool_choice("required"); }, "chat.tool_choice", "needs tools"},
  };
  for (const auto& c : cases) {
    v1::GenerateRequest r = ToolChat();
    c.edit(*r.mutable_chat());
    const Status s = ValidateGenerateRequest(r);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.field;
    EXPECT_EQ(s.field(), c.field) << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr(c.says)) << c.field;
  }
}

struct Checkpoint {
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::shared_ptr<const tokenizer::CheckpointChatTemplate> chat_template;
};

Checkpoint Load(const std::string& dir) {
  Checkpoint c;
  auto tok = tokenizer::Tokenizer::FromDirectory(dir);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  if (tok.ok()) c.tokenizer = std::move(*tok);
  auto t = tokenizer::CheckpointChatTemplate::FromTokenizerConfig(dir + "/tokenizer_config.json");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (t.ok()) c.chat_template = *t;
  return c;
}

std::string Text(const tokenizer::Tokenizer& tok, const std::vector<std::int32_t>& ids) {
  auto text = tok.Decode(ids, /*skip_special_tokens=*/false);
  return text.ok() ? *text : "";
}

TEST(ChatPrompt, TheCheckpointsTemplateRendersTheToolsAndTheForcedOpening) {
  for (const char* model : {"tiny-llada2-grouped", "tiny-dream-tied"}) {
    SCOPED_TRACE(model);
    const Checkpoint c = Load(std::string(UNMASK_TEST_DATA_DIR) + "/" + model);
    ASSERT_NE(c.tokenizer, nullptr);
    ASSERT_NE(c.chat_template, nullptr);
    v1::GenerateRequest r = ToolChat();
    auto plain = EncodeChatPrompt(*c.tokenizer, c.chat_template.get(), r.chat(), model);
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    const std::string text = Text(*c.tokenizer, plain->ids);
    EXPECT_THAT(text, HasSubstr("\"name\": \"get_weather\", \"description\": \"The weather in a city\""));
    EXPECT_THAT(text, HasSubstr("{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}"));  // as written
    EXPECT_THAT(text, HasSubstr("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"));
    EXPECT_THAT(text, HasSubstr("<tool_response>\n{\"temp\": 21}\n</tool_response>"));
    EXPECT_TRUE(plain->tool_use.parse());
    EXPECT_EQ(plain->tool_use.forced_prefix(), "");

    r.mutable_chat()->set_tool_choice("get_weather");
    auto forced = EncodeChatPrompt(*c.tokenizer, c.chat_template.get(), r.chat(), model);
    ASSERT_TRUE(forced.ok()) << forced.status().ToString();
    EXPECT_EQ(Text(*c.tokenizer, forced->ids), text + ForcedToolCallPrefix("get_weather"));
    EXPECT_EQ(forced->tool_use.forced_prefix(), ForcedToolCallPrefix("get_weather"));

    // "none": the template gets no tools (the past calls and answers are still rendered).
    r.mutable_chat()->set_tool_choice("none");
    auto none = EncodeChatPrompt(*c.tokenizer, c.chat_template.get(), r.chat(), model);
    ASSERT_TRUE(none.ok()) << none.status().ToString();
    EXPECT_FALSE(none->tool_use.parse());
    EXPECT_THAT(Text(*c.tokenizer, none->ids), ::testing::Not(HasSubstr("<tools>")));
    EXPECT_THAT(Text(*c.tokenizer, none->ids), HasSubstr("<tool_response>"));
  }
}

TEST(ChatPrompt, AModelWhoseTemplateHasNoPlaceForToolsIsRefusedByName) {
  const Checkpoint kjv = Load(std::string(UNMASK_MODELS_DIR) + "/unmask-kjv");
  ASSERT_NE(kjv.tokenizer, nullptr);
  v1::ChatMessages chat;
  auto* user = chat.add_messages();
  user->set_role("user");
  user->set_content("Who made the light?");
  chat.add_tools()->set_name("search");
  auto s = EncodeChatPrompt(*kjv.tokenizer, kjv.chat_template.get(), chat, "unmask-kjv").status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.field(), "chat.tools");
  EXPECT_THAT(s.message(), HasSubstr("model 'unmask-kjv' takes no tools: its chat template"));
  // Without a template of its own: the built-in one takes no tools, nor tool turns.
  s = EncodeChatPrompt(*kjv.tokenizer, nullptr, chat, "unmask-kjv").status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("ships no chat template"));
  chat.clear_tools();
  auto* tool = chat.add_messages();
  tool->set_role("tool");
  tool->set_tool_call_id("c1");
  s = EncodeChatPrompt(*kjv.tokenizer, nullptr, chat, "unmask-kjv").status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("messages[1]"));
  // Without tools the model's own template answers as before.
  chat.mutable_messages()->RemoveLast();
  EXPECT_TRUE(EncodeChatPrompt(*kjv.tokenizer, kjv.chat_template.get(), chat, "unmask-kjv").ok());
}

}  // namespace
}  // namespace unmask::scheduler
