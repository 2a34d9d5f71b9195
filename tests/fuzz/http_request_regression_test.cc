// HTTP request bodies found by fuzz/http_request_fuzz.cc: a "type" that is not a string made
// json::value("type", "") throw out of the parser (a 500 from the server instead of a 400); a
// tool message answering a call the assistant did not make passed the HTTP parser and was
// refused only by the scheduler's validation, under the gRPC name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "services/scheduler/http/openai_request.h"
#include "tests/fuzz/regression_input.h"

namespace unmask::scheduler::http {
namespace {

using ::testing::HasSubstr;
using unmask::testing::RegressionInput;

Status Parse(Endpoint endpoint, const std::string& name) {
  auto body = ParseJsonBody(RegressionInput("http_request", name));
  if (!body.ok()) return body.status();
  return ParseOpenAiRequest(endpoint, *body).status();
}

TEST(HttpRequestRegressionTest, ContentPartWhoseTypeIsANumberIsInvalidArgument) {
  Status s = Parse(Endpoint::kChatCompletions, "content-part-type-not-a-string.json");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("messages[0].content[0]: must be {\"type\": \"text\""));
}

TEST(HttpRequestRegressionTest, ResponseFormatWhoseTypeIsANumberIsInvalidArgument) {
  Status s = Parse(Endpoint::kCompletions, "response-format-type-not-a-string.json");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("response_format: only {\"type\": \"text\"} is supported"));
}

TEST(HttpRequestRegressionTest, AToolAnswerToACallNotMadeIsRefusedByTheHttpParser) {
  Status s = Parse(Endpoint::kChatCompletions, "tool-answer-to-a-call-not-made.json");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "messages[2].tool_call_id");
  EXPECT_THAT(s.message(), HasSubstr("must be the id of a call the last assistant message before it made"));
}

}  // namespace
}  // namespace unmask::scheduler::http
