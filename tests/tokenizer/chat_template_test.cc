// The built-in LLaDA chat template: rendered text and encoded ids (with the llada-like fixture).
#include "common/tokenizer/chat_template.h"
#include "test_util.h"

namespace unmask::tokenizer::testing {
namespace {

using llada::kBosId;
using llada::kEndHeaderId;
using llada::kEotId;
using llada::kStartHeaderId;

// Ids derived independently of the template code: every special token by its LLaDA id, every
// text piece encoded on its own with special-token parsing off.
std::vector<int32_t> Text(const std::string& s) { return EncodeOrDie(LladaLike(), s, false); }
std::vector<int32_t> Header(const std::string& role) {
  return Concat({{kStartHeaderId}, Text(role), {kEndHeaderId}, Text("\n\n")});
}
std::vector<int32_t> Turn(const std::string& role, const std::string& content) {
  // "\n\n" and the content are one piece of text between two special tokens.
  return Concat({{kStartHeaderId}, Text(role), {kEndHeaderId}, Text("\n\n" + content), {kEotId}});
}

StatusOr<std::vector<int32_t>> Encode(const std::vector<ChatMessage>& m, bool generation_prompt = true) {
  return EncodeLladaChat(LladaLike(), m, generation_prompt);
}

TEST(ChatTemplate, OneTurnText) {
  auto text = ApplyLladaChatTemplate({{"user", "What is 2+2?"}});
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text,
            "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(*ApplyLladaChatTemplate({{"user", "Hi"}}, /*add_generation_prompt=*/false),
            "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
}

TEST(ChatTemplate, OneTurnIds) {
  auto ids = Encode({{"user", "What is 2+2?"}});
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(*ids, Concat({{kBosId}, Turn("user", "What is 2+2?"), Header("assistant")}));
  EXPECT_EQ(ids->front(), 126080);
  EXPECT_EQ(std::count(ids->begin(), ids->end(), kEotId), 1);
}

TEST(ChatTemplate, SeveralTurnsHaveOneBosAndEotAfterEachAnswer) {
  const std::vector<ChatMessage> m = {
      {"user", "Hello"}, {"assistant", "Hi! How can I help?"}, {"user", "Write a poem."}};
  auto text = ApplyLladaChatTemplate(m);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi! How can I help?<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWrite a poem.<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  auto ids = Encode(m);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(*ids, Concat({{kBosId}, Turn("user", "Hello"), Turn("assistant", "Hi! How can I help?"),
                          Turn("user", "Write a poem."), Header("assistant")}));
  EXPECT_EQ(std::count(ids->begin(), ids->end(), kBosId), 1);
  EXPECT_EQ(std::count(ids->begin(), ids->end(), llada::kEosId), 0);
}

TEST(ChatTemplate, SystemTurnComesRightAfterBos) {
  const std::vector<ChatMessage> m = {{"system", "You are a helpful assistant."}, {"user", "Hi"}};
  auto text = ApplyLladaChatTemplate(m);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->rfind("<|startoftext|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant."
                        "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
                        0),
            0u);
  auto ids = Encode(m);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, Concat({{kBosId}, Turn("system", "You are a helpful assistant."), Turn("user", "Hi"),
                          Header("assistant")}));
}

TEST(ChatTemplate, ContentIsTrimmedLikeTheJinjaTemplate) {
  EXPECT_EQ(*ApplyLladaChatTemplate({{"user", " \n Hi there \t\n"}}, false),
            "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>");
}

TEST(ChatTemplate, InvalidConversationsAreRefused) {
  auto expect_error = [](const std::vector<ChatMessage>& m, const std::string& expected) {
    auto text = ApplyLladaChatTemplate(m);
    ASSERT_FALSE(text.ok());
    EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(text.status().message().find(expected), std::string::npos) << text.status().message();
    EXPECT_FALSE(Encode(m).ok());
  };
  expect_error({}, "no messages");
  expect_error({{"user", "a"}, {"bot", "b"}}, "messages[1]: unknown role 'bot'");
  expect_error({{"User", "a"}}, "unknown role 'User'");
  expect_error({{"user", "a"}, {"system", "b"}}, "messages[1]: a system message is only allowed first");
}

TEST(ChatTemplate, ChecksTheTokenizerHasLladaSpecialTokens) {
  EXPECT_TRUE(CheckLladaSpecialTokens(LladaLike()).ok());
  const Status s = CheckLladaSpecialTokens(Gpt2());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("<|startoftext|>"), std::string::npos) << s.message();
  auto ids = EncodeLladaChat(Gpt2(), {{"user", "Hi"}});
  EXPECT_FALSE(ids.ok());
}

TEST(ChatTemplate, DecodeSkipsTheTemplateTokens) {
  auto ids = Encode({{"user", "Hello there"}});
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*LladaLike().Decode(*ids, true), "user\n\nHello thereassistant\n\n");
  EXPECT_EQ(*LladaLike().Decode(*ids, false), *ApplyLladaChatTemplate({{"user", "Hello there"}}));
}

}  // namespace
}  // namespace unmask::tokenizer::testing
