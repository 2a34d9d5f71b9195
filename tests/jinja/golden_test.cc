// Every case of tests/data/chat_templates/golden.json rendered by common/jinja: the published
// chat templates on many conversations, and one-feature templates, byte for byte as Jinja2 3.1
// in transformers' environment renders them; where Jinja2 fails, common/jinja fails too (and
// carries raise_exception's message).
#include <gtest/gtest.h>

#include <map>

#include "common/jinja/chat_template.h"
#include "tests/jinja/test_util.h"

namespace unmask::jinja {
namespace {

using testing::ChatTemplatePath;
using testing::Diff;
using testing::Golden;
using testing::GoldenOptions;
using testing::ReadFile;

// Renders one case; returns a failure description, or "" when it matches.
std::string Check(const std::string& name, const std::string& text, const nlohmann::ordered_json& c) {
  StatusOr<std::string> rendered = RenderChatTemplate(text, c["context"], GoldenOptions());
  if (c.contains("expected")) {
    const std::string expected = c["expected"].get<std::string>();
    if (!rendered.ok()) return name + ": failed: " + rendered.status().ToString();
    if (*rendered != expected) return name + ": " + Diff(expected, *rendered);
    return "";
  }
  if (rendered.ok()) return name + ": rendered, but Jinja2 fails with " + c["error_type"].get<std::string>() + ": " + c["error"].get<std::string>();
  if (c["error_type"] == "TemplateError") {  // raise_exception(msg): the message must carry msg
    const std::string message = c["error"].get<std::string>();
    if (rendered.status().message().find(message) == std::string::npos) {
      return name + ": the error '" + rendered.status().message() + "' does not carry '" + message + "'";
    }
    if (rendered.status().reason() != "TEMPLATE_RAISED") return name + ": reason " + rendered.status().reason();
  }
  return "";
}

TEST(JinjaGoldenTest, PublishedChatTemplatesRenderAsTransformers) {
  std::map<std::string, std::string> templates;
  for (const auto& [name, file] : Golden()["templates"].items()) {
    templates[name] = ReadFile(ChatTemplatePath(file.get<std::string>()));
    ASSERT_FALSE(templates[name].empty()) << file;
  }
  int checked = 0, rendered = 0;
  for (const auto& c : Golden()["chat"]) {
    const std::string name = c["name"].get<std::string>();
    const std::string failure = Check(name, templates.at(c["template"].get<std::string>()), c);
    EXPECT_EQ(failure, "");
    ++checked;
    rendered += c.contains("expected") ? 1 : 0;
  }
  EXPECT_GE(checked, 200);
  EXPECT_GE(rendered, 200);
}

TEST(JinjaGoldenTest, EveryTemplateIsCovered) {
  std::map<std::string, int> cases;
  for (const auto& c : Golden()["chat"]) ++cases[c["template"].get<std::string>()];
  for (const char* name : {"llada-8b-instruct", "llama-3-8b-instruct", "llama-3.1-8b-instruct", "qwen2.5-7b-instruct",
                           "dream-v0-instruct-7b", "ling-2.0"}) {
    EXPECT_GE(cases[name], 30) << name;
  }
}

TEST(JinjaGoldenTest, LanguageFeaturesRenderAsJinja2) {
  int checked = 0;
  for (const auto& c : Golden()["features"]) {
    const std::string text = c["template_text"].get<std::string>();
    const std::string failure = Check(c["name"].get<std::string>() + " " + nlohmann::json(text).dump(), text, c);
    EXPECT_EQ(failure, "");
    ++checked;
  }
  EXPECT_GE(checked, 100);
}

}  // namespace
}  // namespace unmask::jinja
