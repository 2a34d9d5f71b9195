// The API of common/jinja (Template, RenderChatTemplate, ChatTemplateContext), and the published
// LLaDA and Ling templates cross-checked against the built-in C++ ones of common/tokenizer.
#include <gtest/gtest.h>

#include <vector>

#include "common/jinja/chat_template.h"
#include "common/tokenizer/chat_template.h"
#include "common/tokenizer/ling_chat_template.h"
#include "tests/jinja/test_util.h"

namespace unmask::jinja {
namespace {

using nlohmann::ordered_json;
using testing::ChatTemplatePath;
using testing::ReadFile;

ordered_json Messages(const std::vector<tokenizer::ChatMessage>& messages) {
  ordered_json out = ordered_json::array();
  for (const auto& m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
  return out;
}

std::vector<std::vector<tokenizer::ChatMessage>> Conversations() {
  return {
      {{"user", "Hello"}},
      {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "  Hello!  "}, {"user", "\nBye\n"}},
      {{"user", "héllo 世界 🎉"}, {"assistant", "<think>\nhmm\n</think>\n\nfine"}, {"user", "{{ x }}{% if %}"}},
      {{"user", "q"}, {"assistant", "<think>old</think>a"}, {"user", "q2"}, {"assistant", "<think>\nnew\n</think>a2"}},
      {{"user", ""}, {"system", "later"}, {"assistant", ""}},
  };
}

TEST(JinjaApiTest, ParsedTemplateRendersManyContexts) {
  StatusOr<Template> t = Template::Parse("{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const Template copy = *t;  // copies share the parsed tree
  EXPECT_EQ(*t->Render({{"messages", {{{"role", "user"}, {"content", "a"}}}}}), "[user:a]");
  EXPECT_EQ(*copy.Render({{"messages", ordered_json::array()}}), "");
  EXPECT_EQ(*t->Render(nullptr), "");  // no variables: messages is undefined and iterates as empty
}

TEST(JinjaApiTest, ContextMustBeAnObject) {
  StatusOr<std::string> r = RenderChatTemplate("x", ordered_json::array({1}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("must be a JSON object"), std::string::npos) << r.status().message();
}

TEST(JinjaApiTest, UnparsedTemplateDoesNotRender) {
  const Template t;
  EXPECT_EQ(t.Render(ordered_json::object()).status().code(), StatusCode::kFailedPrecondition);
}

TEST(JinjaApiTest, ContextHasWhatApplyChatTemplatePasses) {
  const ordered_json config = ordered_json::parse(ReadFile(std::string(UNMASK_TEST_DATA) + "/tiny-llada2/tokenizer_config.json"));
  const ordered_json messages = {{{"role", "user"}, {"content", "hi"}}};
  const ordered_json context = ChatTemplateContext(config, messages, true);
  EXPECT_EQ(context["messages"], messages);
  EXPECT_TRUE(context["tools"].is_null());
  EXPECT_TRUE(context["documents"].is_null());
  EXPECT_EQ(context["add_generation_prompt"], true);
  EXPECT_FALSE(context.contains("bos_token"));  // null in the config: undefined in the template
  EXPECT_EQ(context["eos_token"], "<|endoftext|>");
  EXPECT_EQ(context["mask_token"], "<|mask|>");

  const ordered_json added = {{"bos_token", {{"__type", "AddedToken"}, {"content", "<s>"}}},
                              {"additional_special_tokens", {"<a>", {{"content", "<b>"}}}}};
  const ordered_json tools = {{{"type", "function"}}};
  const ordered_json c2 = ChatTemplateContext(added, messages, false, tools);
  EXPECT_EQ(c2["bos_token"], "<s>");
  EXPECT_EQ(c2["additional_special_tokens"], ordered_json({"<a>", "<b>"}));
  EXPECT_EQ(c2["tools"], tools);
  EXPECT_EQ(c2["add_generation_prompt"], false);
}

TEST(JinjaApiTest, LingTemplateRendersWhatTheBuiltInRenders) {
  const std::string text = ReadFile(ChatTemplatePath("ling-2.0.jinja"));
  const ordered_json config = ordered_json::parse(ReadFile(std::string(UNMASK_TEST_DATA) + "/tiny-llada2/tokenizer_config.json"));
  ASSERT_EQ(config["chat_template"], text);
  for (const auto& conversation : Conversations()) {
    for (bool agp : {true, false}) {
      StatusOr<std::string> built_in = tokenizer::ApplyLingChatTemplate(conversation, agp);
      ASSERT_TRUE(built_in.ok());
      StatusOr<std::string> jinja = RenderChatTemplate(text, ChatTemplateContext(config, Messages(conversation), agp));
      ASSERT_TRUE(jinja.ok()) << jinja.status().ToString();
      EXPECT_EQ(*jinja, *built_in) << testing::Diff(*built_in, *jinja);
    }
  }
}

TEST(JinjaApiTest, LladaTemplateRendersWhatTheBuiltInRenders) {
  // The built-in renders LLaDA's template with Llama-3's `if add_generation_prompt` (the one of
  // models/unmask-kjv and Meta-Llama-3-8B-Instruct); LLaDA-8B-Instruct's own always adds it.
  const ordered_json kjv = ordered_json::parse(ReadFile(UNMASK_KJV_TOKENIZER_CONFIG));
  const std::string llama3 = ReadFile(ChatTemplatePath("llama-3-8b-instruct.jinja"));
  ASSERT_EQ(kjv["chat_template"], llama3);
  const std::string llada = ReadFile(ChatTemplatePath("llada-8b-instruct.jinja"));
  for (const auto& conversation : Conversations()) {
    if (conversation.size() > 1 && conversation[1].role == "system") continue;  // the built-in refuses a later system message
    for (bool agp : {true, false}) {
      StatusOr<std::string> built_in = tokenizer::ApplyLladaChatTemplate(conversation, agp);
      ASSERT_TRUE(built_in.ok()) << built_in.status().ToString();
      const ordered_json context = ChatTemplateContext(kjv, Messages(conversation), agp);
      StatusOr<std::string> jinja = RenderChatTemplate(llama3, context);
      ASSERT_TRUE(jinja.ok()) << jinja.status().ToString();
      EXPECT_EQ(*jinja, *built_in) << testing::Diff(*built_in, *jinja);
      if (agp) {
        EXPECT_EQ(*RenderChatTemplate(llada, context), *built_in);
      }
    }
  }
}

TEST(JinjaApiTest, StrftimeNowReadsTheClock) {
  RenderOptions options = testing::GoldenOptions();
  EXPECT_EQ(*RenderChatTemplate("{{ strftime_now('%d %b %Y') }}", nullptr, options), "14 Nov 2023");
  options.clock = nullptr;  // the system clock
  StatusOr<std::string> now = RenderChatTemplate("{{ strftime_now('%Y') }}", nullptr, options);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->size(), 4u);
}

TEST(JinjaApiTest, BytesThatAreNotUtf8PassThrough) {
  const ordered_json context = {{"s", std::string("a\xff\xfe" "b")}};
  // nlohmann refuses to dump invalid UTF-8, but the template only copies and measures it.
  StatusOr<std::string> r = RenderChatTemplate("{{ s }}|{{ s|length }}|{{ s|upper }}|{{ s[1:] }}", context);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, std::string("a\xff\xfe" "b|4|A\xff\xfe" "B|\xff\xfe" "b"));
}

}  // namespace
}  // namespace unmask::jinja
