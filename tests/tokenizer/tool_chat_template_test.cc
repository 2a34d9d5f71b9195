// Conversations with tools through the chat template a checkpoint ships
// (CheckpointChatTemplate::Render with tools, tool calls and tool answers): Ling-2.0's template
// (LLaDA-MoE, LLaDA2.x) and Dream's (Qwen2.5's) give exactly what Jinja2 gives on the tool
// cases of tests/data/chat_templates/golden.json, with the calls' arguments given as the text an
// OpenAI client sends; the built-in templates refuse tool turns by message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/tokenizer/checkpoint_chat_template.h"
#include "common/tokenizer/ling_chat_template.h"
#include "tests/tokenizer/test_util.h"

namespace unmask::tokenizer {
namespace {

using ::testing::HasSubstr;
using testing::DataPath;
using nlohmann::ordered_json;

ordered_json ReadOrdered(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return ordered_json::parse(buf.str());
}

// The golden case's messages as the scheduler hands them over: contents as strings (null ->
// ""), each call's arguments as JSON text.
std::vector<ChatMessage> Messages(const ordered_json& context) {
  std::vector<ChatMessage> out;
  for (const auto& m : context["messages"]) {
    ChatMessage message{m["role"].get<std::string>(), m["content"].is_string() ? m["content"].get<std::string>() : ""};
    if (m.contains("tool_calls")) {
      for (const auto& c : m["tool_calls"]) {
        const auto& f = c["function"];
        message.tool_calls.push_back({c.value("id", ""), f["name"].get<std::string>(),
                                      f["arguments"].is_string() ? f["arguments"].get<std::string>() : f["arguments"].dump()});
      }
    }
    message.tool_call_id = m.value("tool_call_id", "");
    out.push_back(std::move(message));
  }
  return out;
}

TEST(ToolChatTemplate, LingAndDreamTemplatesRenderToolConversationsAsJinja2Does) {
  const ordered_json golden = ReadOrdered(DataPath("chat_templates/golden.json"));
  int compared = 0;
  for (const auto& c : golden["chat"]) {
    const std::string name = c["name"];
    const std::string file = c["template"];
    if (file != "ling-2.0" && file != "dream-v0-instruct-7b") continue;
    const std::string kind = name.substr(file.size() + 1, name.rfind('/') - file.size() - 1);
    // The cases whose calls carry what an OpenAI client sends: an object of arguments (text on
    // the wire) and a content that is a string or null.
    if (kind != "tool_call_and_result" && kind != "tool_call_none_content" && kind != "tool_call_with_text" &&
        kind != "tools_no_calls" && kind != "tools_no_system" && kind != "parallel_tool_calls")
      continue;
    SCOPED_TRACE(name);
    const ordered_json& context = c["context"];
    ordered_json config = ordered_json::object();
    std::ifstream in(DataPath("chat_templates/" + file + ".jinja"));
    std::stringstream text;
    text << in.rdbuf();
    config["chat_template"] = text.str();
    for (const char* token : {"bos_token", "eos_token", "pad_token", "mask_token"}) {
      if (context.contains(token)) config[token] = context[token];
    }
    auto t = CheckpointChatTemplate::FromText(config.dump(), file);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    auto rendered = (*t)->Render(Messages(context), context["add_generation_prompt"].get<bool>(), context["tools"]);
    ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
    EXPECT_EQ(*rendered, c["expected"].get<std::string>());
    ++compared;
  }
  EXPECT_GE(compared, 20);  // 2 templates x 6 kinds x 2 add_generation_prompt, less any absent
}

TEST(ToolChatTemplate, TheBuiltInTemplatesRefuseToolTurnsNamingTheMessage) {
  std::vector<ChatMessage> called = {{"user", "Weather?"}, {"assistant", "", {{"c1", "get_weather", "{}"}}, ""}, {"user", "ok"}};
  std::vector<ChatMessage> answered = {{"user", "Weather?"}, {"tool", "sunny", {}, "c1"}};
  for (const auto* messages : {&called, &answered}) {
    for (const auto& status : {ApplyLladaChatTemplate(*messages).status(), ApplyLingChatTemplate(*messages).status()}) {
      ASSERT_FALSE(status.ok());
      EXPECT_THAT(status.message(), HasSubstr("messages[1]"));
      EXPECT_THAT(status.message(), HasSubstr("need the checkpoint's own chat template"));
    }
  }
}

}  // namespace
}  // namespace unmask::tokenizer
