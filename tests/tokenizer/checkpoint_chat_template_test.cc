// The chat template a checkpoint ships in tokenizer_config.json, rendered with the Jinja
// interpreter (common/tokenizer/checkpoint_chat_template.h): LLaDA-8B-Instruct's and Ling-2.0's
// templates give exactly what the built-in copies give (which their own tests check against the
// official strings), Dream's (published, Qwen2.5's with another default system message) gives the
// <|im_start|> format and encodes with its special ids, and bad files, templates and conversations are refused naming what is wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/tokenizer/checkpoint_chat_template.h"
#include "common/tokenizer/ling_chat_template.h"
#include "tests/tokenizer/test_util.h"

namespace unmask::tokenizer {
namespace {

using ::testing::HasSubstr;
using testing::DataPath;
using testing::Json;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::shared_ptr<const CheckpointChatTemplate> FromConfig(const Json& config) {
  auto t = CheckpointChatTemplate::FromText(config.dump(), "tokenizer_config.json");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? *t : nullptr;
}

const std::vector<std::vector<ChatMessage>>& Conversations() {
  static const std::vector<std::vector<ChatMessage>> kConversations = {
      {{"user", "In the beginning?"}},
      {{"system", "  Answer in the words of the book.\n"}, {"user", "Who made the light? "}},
      {{"user", "Hi"}, {"assistant", "Peace be with you."}, {"user", "And with you."}},
      {{"system", "Be brief."}, {"user", "é 中文 <b>bold</b> {{ not jinja }}"}, {"assistant", ""}, {"user", "ok"}},
  };
  return kConversations;
}

// LLaDA-8B-Instruct's published template always ends with the assistant header; unmask's own
// model ships Llama-3's, which honours add_generation_prompt. Both render what the built-in does.
TEST(CheckpointChatTemplate, LladasTemplatesRenderWhatTheBuiltInRenders) {
  for (const char* file : {"chat_templates/llada-8b-instruct.jinja", "chat_templates/llama-3-8b-instruct.jinja"}) {
    SCOPED_TRACE(file);
    const auto t = FromConfig({{"chat_template", ReadText(DataPath(file))},
                               {"bos_token", "<|startoftext|>"},
                               {"eos_token", "<|eot_id|>"}});
    ASSERT_NE(t, nullptr);
    const bool honours_gen = std::string(file).find("llama") != std::string::npos;
    for (bool gen : {true, false}) {
      if (!gen && !honours_gen) continue;
      for (const auto& messages : Conversations()) {
        auto ours = t->Render(messages, gen);
        ASSERT_TRUE(ours.ok()) << ours.status().ToString();
        EXPECT_EQ(*ours, *ApplyLladaChatTemplate(messages, gen));
      }
    }
  }
}

TEST(CheckpointChatTemplate, TheLlada2CheckpointsTemplateRendersWhatTheBuiltInRenders) {
  auto t = CheckpointChatTemplate::FromTokenizerConfig(DataPath("tiny-llada2/tokenizer_config.json"));
  ASSERT_TRUE(t.ok() && *t) << t.status().ToString();
  for (bool gen : {true, false}) {
    for (const auto& messages : Conversations()) {
      auto ours = (*t)->Render(messages, gen);
      ASSERT_TRUE(ours.ok()) << ours.status().ToString();
      EXPECT_EQ(*ours, *ApplyLingChatTemplate(messages, gen));
    }
  }
}

TEST(CheckpointChatTemplate, DreamsTemplateGivesTheImStartFormatAndItsSpecialIds) {
  auto t = CheckpointChatTemplate::FromTokenizerConfig(DataPath("tiny-dream/tokenizer_config.json"));
  ASSERT_TRUE(t.ok() && *t) << t.status().ToString();
  auto text = (*t)->Render({{"user", "Hi"}});
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text,
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  auto with_system = (*t)->Render({{"system", "Be brief."}, {"user", "Hi"}}, /*add_generation_prompt=*/false);
  ASSERT_TRUE(with_system.ok());
  EXPECT_EQ(*with_system, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
  // Dream ships vocab.json + merges.txt, no tokenizer.json.
  auto tok = Tokenizer::FromDirectory(DataPath("tiny-dream"));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  auto ids = EncodeChat(**tok, t->get(), {{"user", "Hi"}});
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(ids->front(), 481) << "<|im_start|>";
  EXPECT_EQ(std::count(ids->begin(), ids->end(), 482), 2) << "two <|im_end|>";
  EXPECT_EQ(std::count(ids->begin(), ids->end(), 481), 3) << "system, user, assistant";
  EXPECT_EQ(*ids, *(*tok)->Encode(*text, /*parse_special_tokens=*/true));
}

TEST(CheckpointChatTemplate, NoFileOrNoTemplateIsNull) {
  auto none = CheckpointChatTemplate::FromTokenizerConfig(DataPath("no-such-model/tokenizer_config.json"));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  auto empty = CheckpointChatTemplate::FromText(R"({"bos_token": "<s>"})", "tokenizer_config.json");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, nullptr);
  // A list of named templates: "default" is the one.
  const auto t = FromConfig({{"chat_template", Json::array({{{"name", "tool_use"}, {"template", "TOOLS"}},
                                                            {{"name", "default"}, {"template", "{{ messages[0].content }}"}}})}});
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(*t->Render({{"user", "x"}}), "x");
}

TEST(CheckpointChatTemplate, BadFilesTemplatesAndConversationsNameWhatIsWrong) {
  struct Case {
    std::string text;
    const char* says;
  } cases[] = {
      {"{not json", "tokenizer_config.json: not well-formed JSON"},
      {R"({"chat_template": 5})", "'chat_template' must be a string or a list of {name, template}"},
      {R"({"chat_template": [{"name": "tool_use", "template": "x"}]})", "without a template named \"default\""},
      {R"({"chat_template": "{% for m in messages %}{{ m.content }}"})", "tokenizer_config.json: chat_template: "},
  };
  for (const auto& c : cases) {
    auto t = CheckpointChatTemplate::FromText(c.text, "tokenizer_config.json");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_THAT(t.status().message(), HasSubstr(c.says));
  }
  auto unclosed = CheckpointChatTemplate::FromText(R"({"chat_template": "{% if x %}open"})", "tokenizer_config.json");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_THAT(unclosed.status().message(), HasSubstr("1:"));  // the line:column of what does not parse
  const auto t = FromConfig(
      {{"chat_template", "{% if messages[0].role != 'user' %}{{ raise_exception('user first') }}{% endif %}ok"}});
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(t->Render({{"assistant", "x"}}).status().message(), HasSubstr("user first"));
  EXPECT_EQ(t->Render({}).status().field(), "messages");
  const Status role = t->Render({{"user", "a"}, {"robot", "b"}}).status();
  EXPECT_EQ(role.field(), "messages[1].role");
  EXPECT_THAT(role.message(), HasSubstr("'robot' is not one of system, user, assistant, tool"));
}

}  // namespace
}  // namespace unmask::tokenizer
