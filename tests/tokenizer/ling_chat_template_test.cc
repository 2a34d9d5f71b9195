// The built-in Ling-2.0 chat template (LLaDA-MoE, LLaDA2.x; common/tokenizer/ling_chat_template.h):
// the text the Jinja template in tests/data/tiny-llada2/tokenizer_config.json renders, worked out
// by hand from that template for each case, and EncodeChat choosing it by the tokenizer.
#include "common/tokenizer/ling_chat_template.h"
#include "test_util.h"

namespace unmask::tokenizer::testing {
namespace {

const std::string kHead = "<role>SYSTEM</role>detailed thinking off<|role_end|>";

const Tokenizer& Llada2() {
  static const Tokenizer& tok = LoadShared("tiny-llada2/tokenizer.json");
  return tok;
}

TEST(LingChatTemplate, OneUserTurn) {
  EXPECT_EQ(*ApplyLingChatTemplate({{"user", "Who are you?"}}),
            kHead + "<role>HUMAN</role>Who are you?<|role_end|><role>ASSISTANT</role>");
  EXPECT_EQ(*ApplyLingChatTemplate({{"user", "Who are you?"}}, /*add_generation_prompt=*/false),
            kHead + "<role>HUMAN</role>Who are you?<|role_end|>");
}

TEST(LingChatTemplate, AFirstSystemMessageGoesIntoTheHeader) {
  EXPECT_EQ(*ApplyLingChatTemplate({{"system", "Be brief."}, {"user", "Hi"}}),
            "<role>SYSTEM</role>Be brief.\ndetailed thinking off<|role_end|><role>HUMAN</role>Hi<|role_end|>"
            "<role>ASSISTANT</role>");
  // A later system message is a turn of its own.
  EXPECT_EQ(*ApplyLingChatTemplate({{"user", "Hi"}, {"system", "Now in French."}}, false),
            kHead + "<role>HUMAN</role>Hi<|role_end|><role>SYSTEM</role>Now in French.<|role_end|>");
}

TEST(LingChatTemplate, ContentIsNotTrimmed) {
  EXPECT_EQ(*ApplyLingChatTemplate({{"user", "  spaced \n"}}, false),
            kHead + "<role>HUMAN</role>  spaced \n<|role_end|>");
}

TEST(LingChatTemplate, ReasoningIsKeptOnlyAfterTheLastQuestion) {
  const std::vector<ChatMessage> messages = {{"user", "a"},
                                             {"assistant", "<think>\nold thought\n</think>\n\nold answer"},
                                             {"user", "b"},
                                             {"assistant", "<think>new thought</think>new answer"}};
  EXPECT_EQ(*ApplyLingChatTemplate(messages, false),
            kHead + "<role>HUMAN</role>a<|role_end|><role>ASSISTANT</role>old answer<|role_end|>" +
                "<role>HUMAN</role>b<|role_end|>" +
                "<role>ASSISTANT</role>\n<think>\nnew thought\n</think>\n\nnew answer<|role_end|>");
  // A user message that wraps a tool response is not a question.
  EXPECT_EQ(*ApplyLingChatTemplate({{"user", "q"}, {"user", "<tool_response>r</tool_response>"},
                                    {"assistant", "<think>t</think>x"}},
                                   false),
            kHead + "<role>HUMAN</role>q<|role_end|><role>HUMAN</role><tool_response>r</tool_response><|role_end|>" +
                "<role>ASSISTANT</role>\n<think>\nt\n</think>\n\nx<|role_end|>");
}

TEST(LingChatTemplate, BadConversationsAreRefusedNamingTheMessage) {
  auto empty = ApplyLingChatTemplate({});
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  auto role = ApplyLingChatTemplate({{"user", "a"}, {"tool", "b"}});
  EXPECT_EQ(role.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(role.status().message().find("messages[1]"), std::string::npos) << role.status().message();
}

TEST(LingChatTemplate, EncodeChatPicksTheTemplateOfTheTokenizer) {
  EXPECT_TRUE(HasLingChatTokens(Llada2()));
  EXPECT_FALSE(HasLingChatTokens(LladaLike()));
  auto ids = EncodeChat(Llada2(), {{"user", "Who are you?"}});
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  const std::vector<int32_t> role_open = {*Llada2().TokenToId("<role>")};
  const int32_t role_end = *Llada2().TokenToId("<|role_end|>");
  EXPECT_EQ(ids->front(), role_open[0]);
  EXPECT_EQ(std::count(ids->begin(), ids->end(), role_end), 2);
  EXPECT_EQ(*Llada2().Decode(*ids, /*skip_special_tokens=*/false),
            kHead + "<role>HUMAN</role>Who are you?<|role_end|><role>ASSISTANT</role>");
  // LLaDA's tokenizer still gets LLaDA's template.
  auto llada = EncodeChat(LladaLike(), {{"user", "Hi"}});
  ASSERT_TRUE(llada.ok());
  EXPECT_EQ(*llada, *EncodeLladaChat(LladaLike(), {{"user", "Hi"}}));
}

}  // namespace
}  // namespace unmask::tokenizer::testing
