// Status -> HTTP status and OpenAI error object: the statuses the OpenAI SDKs turn into their
// exception classes, and the param that names the field.
#include "services/scheduler/http/http_errors.h"

#include <gtest/gtest.h>

#include "common/auth/api_keys.h"
#include "common/auth/sha256.h"
#include "services/scheduler/http/field_names.h"
#include "services/scheduler/request_limits.h"
#include "services/scheduler/scheduler_core.h"

namespace unmask::scheduler::http {
namespace {

TEST(HttpErrorsTest, AKeyOverItsOwnLimitGets429NamingTheLimit) {
  auth::ApiKeys keys({{auth::Sha256Hex("k"), "alice", auth::KeyLimits{1, 1}, 1}});
  const auth::ApiKey* alice = *keys.Authenticate("Bearer k");
  ASSERT_TRUE(keys.AdmitRequest(*alice).ok());
  const Status over_rate = keys.AdmitRequest(*alice);
  auto held = keys.ReserveJob(*alice, [](const std::string&) { return false; });
  ASSERT_TRUE(held.ok());
  const Status over_jobs = keys.ReserveJob(*alice, [](const std::string&) { return false; }).status();
  for (const Status& s : {over_rate, over_jobs}) {
    const HttpError e = ToHttpError(s);
    EXPECT_EQ(e.status, 429) << s.ToString();
    EXPECT_EQ(e.body["error"]["type"], "rate_limit_error");
    EXPECT_EQ(e.body["error"]["code"], "api_key_limit");
  }
  EXPECT_NE(ToHttpError(over_rate).body["error"]["message"].get<std::string>().find("requests_per_second=1"), std::string::npos);
  EXPECT_NE(ToHttpError(over_jobs).body["error"]["message"].get<std::string>().find("max_queued_jobs=1"), std::string::npos);
}

TEST(HttpErrorsTest, EachCodeGetsItsHttpStatus) {
  struct Case {
    Status status;
    int http;
    const char* type;
  };
  const Case cases[] = {
      {InvalidArgumentError("steps: must be >= 1, got 0"), 400, "invalid_request_error"},
      {OutOfRangeError("x: out"), 400, "invalid_request_error"},
      {FailedPreconditionError("model 'm' has no tokenizer.json"), 400, "invalid_request_error"},
      {Status(StatusCode::kUnauthenticated, "a valid API key is required"), 401, "authentication_error"},
      {PermissionDeniedError("no"), 403, "permission_error"},
      {NotFoundError("model: no executor serves 'x' and no model root holds it"), 404, "invalid_request_error"},
      {ResourceExhaustedError("the queue is full (5 jobs); try again later").WithReason("QUEUE_FULL"), 429, "rate_limit_error"},
      {ResourceExhaustedError("does not fit the executors' memory even at gen_length 1"), 503, "service_unavailable"},
      {UnavailableError("model: 'm' is known but no executor serves it now"), 503, "service_unavailable"},
      {Status(StatusCode::kDeadlineExceeded, "deadline"), 504, "timeout"},
      {UnimplementedError("later"), 501, "server_error"},
      {InternalError("boom"), 500, "server_error"},
      {CancelledError("cancelled"), 500, "server_error"},
  };
  for (const auto& c : cases) {
    const HttpError e = ToHttpError(c.status);
    EXPECT_EQ(e.status, c.http) << c.status.ToString();
    const auto& err = e.body.at("error");
    EXPECT_EQ(err.at("type"), c.type) << c.status.ToString();
    EXPECT_EQ(err.at("message"), c.status.message());
    EXPECT_TRUE(err.contains("param"));
    EXPECT_TRUE(err.contains("code"));
  }
}

TEST(HttpErrorsTest, ResourceExhaustedIsToldApartByItsReason) {
  struct Case {
    const char* reason;
    int http;
    const char* code;
  };
  for (const Case& c : {Case{"QUEUE_FULL", 429, "queue_full"}, Case{"API_KEY_LIMIT", 429, "api_key_limit"},
                        Case{"API_KEY_RATE", 429, "api_key_limit"}, Case{"CLIENT_JOB_LIMIT", 429, "client_limit"},
                        Case{"DOES_NOT_FIT", 503, "does_not_fit"}, Case{"", 503, "does_not_fit"}}) {
    const Status s = ResourceExhaustedError("refused").WithReason(c.reason, {{"limit", "5"}});
    const HttpError e = ToHttpError(s);
    EXPECT_EQ(e.status, c.http) << c.reason;
    EXPECT_EQ(e.body["error"]["code"], c.code) << c.reason;
    EXPECT_TRUE(e.body["error"]["param"].is_null()) << c.reason;
  }
}

TEST(HttpErrorsTest, AMessageThatReadsLikeARefusalIsNotOne) {
  // No message text is parsed: only the reason tells a full queue from a request that does not fit.
  const Status look_alike = ResourceExhaustedError("the queue is full (1000 jobs); try again later");
  EXPECT_FALSE(IsQueueFull(look_alike));
  EXPECT_FALSE(IsClientJobLimit(ResourceExhaustedError("client limit: client 10.0.0.1 has 2 jobs")));
  EXPECT_FALSE(auth::IsKeyLimit(ResourceExhaustedError("API key limit: key 'a' has 2 jobs")));
  EXPECT_EQ(ToHttpError(look_alike).status, 503);
  EXPECT_EQ(ToHttpError(look_alike).body["error"]["code"], "does_not_fit");
  EXPECT_TRUE(IsQueueFull(ResourceExhaustedError("refused").WithReason("QUEUE_FULL")));
  EXPECT_FALSE(IsQueueFull(InvalidArgumentError("refused").WithReason("QUEUE_FULL")));  // only RESOURCE_EXHAUSTED
  EXPECT_FALSE(IsQueueFull(ResourceExhaustedError("refused").WithReason("DOES_NOT_FIT")));
  // And a message that starts with a field name names no field.
  EXPECT_TRUE(ToHttpError(InvalidArgumentError("steps: must be >= 1, got 0")).body["error"]["param"].is_null());
}

TEST(HttpErrorsTest, AnUnknownModelIsModelNotFound) {
  const HttpError e =
      ToHttpError(NotFoundError("model: no executor serves 'x' and no model root holds it").WithField("model"));
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(e.body["error"]["param"], "model");
  EXPECT_EQ(e.body["error"]["code"], "model_not_found");
  EXPECT_EQ(ToHttpError(NotFoundError("no job 'j'")).body["error"]["code"], "not_found");
}

TEST(HttpErrorsTest, ParamIsTheDetailsFieldInTheHttpApisNames) {
  struct Case {
    Status status;
    const char* param;
  };
  const Case cases[] = {
      {InvalidFieldError("params.gen_length", "must be in [1, 16384], got 0"), "max_tokens"},
      {InvalidFieldError("params.steps", "must be >= 1, got 0"), "steps"},
      {InvalidArgumentError("params: steps (100) must be <= gen_length (64)").WithField("params.steps"), "steps"},
      {InvalidFieldError("chat.messages[1].role", "must be system, user or assistant"), "messages[1].role"},
      {InvalidFieldError("text", "must not be empty"), "prompt"},
      {InvalidFieldError("ids[3]", "token id 99999 is outside the vocabulary"), "prompt[3]"},
      {InvalidFieldError("priority", "must be in [-10, 10], got 11"), "priority"},
      {OutOfRangeError("x: out").WithField("max_tokens"), "max_tokens"},
      {UnavailableError("'m' is known but no executor serves it now").WithField("model"), "model"},
      // The core's refusals of a template with holes and of a suffix (issue 31).
      {InvalidFieldError("template_text", "has no <hole:N> marker"), "template"},
      {InvalidFieldError("template_text", "<hole:0>: a hole must be 1..4096 tokens long"), "template"},
      {FailedPreconditionError("model 'm' has no tokenizer.json").WithField("suffix"), "suffix"},
      {InvalidFieldError("params.logprobs", "must be in [0, 20] (unset = none), got 21"), "logprobs"},
  };
  for (const auto& c : cases) {
    const HttpError e = ToHttpError(c.status);
    EXPECT_EQ(e.body["error"]["param"], c.param) << c.status.ToString();
  }
  // A message led by the gRPC name leads with the HTTP name; any other message is kept.
  const HttpError led = ToHttpError(InvalidFieldError("params.gen_length", "is 99, but the template is 5 tokens long"));
  EXPECT_EQ(led.body["error"]["message"], "max_tokens: is 99, but the template is 5 tokens long");
  EXPECT_EQ(ToHttpError(InvalidFieldError("template_text", "has no <hole:N> marker")).body["error"]["message"],
            "template: has no <hole:N> marker");
  EXPECT_EQ(ToHttpError(InvalidArgumentError("prompt: encodes to no tokens").WithField("text")).body["error"]["message"],
            "prompt: encodes to no tokens");
}

TEST(HttpErrorsTest, TheFieldNameTableMapsGrpcNamesToOpenAiNames) {
  EXPECT_EQ(OpenAiFieldName("params.gen_length"), "max_tokens");
  EXPECT_EQ(OpenAiFieldName("gen_length"), "max_tokens");
  EXPECT_EQ(OpenAiFieldName("params.steps"), "steps");
  EXPECT_EQ(OpenAiFieldName("params.sampler"), "sampler");
  EXPECT_EQ(OpenAiFieldName("text"), "prompt");
  EXPECT_EQ(OpenAiFieldName("ids"), "prompt");
  EXPECT_EQ(OpenAiFieldName("ids[3]"), "prompt[3]");
  EXPECT_EQ(OpenAiFieldName("chat.messages"), "messages");
  EXPECT_EQ(OpenAiFieldName("chat.messages[1].role"), "messages[1].role");
  EXPECT_EQ(OpenAiFieldName("chat"), "messages");
  EXPECT_EQ(OpenAiFieldName("template_text"), "template");
  EXPECT_EQ(OpenAiFieldName("params.logprobs"), "logprobs");
  // The HTTP API's own names (set by its parser) and the names both APIs share pass through.
  for (const char* same : {"model", "priority", "deadline_seconds", "prompt", "prompt[2]", "max_tokens",
                           "messages[0].content[1]", "stop[1]", "stream_options.include_usage", "idempotency_key", "n",
                           "suffix", "echo", "top_logprobs", "template"})
    EXPECT_EQ(OpenAiFieldName(same), same);
  // A prefix matches whole names only.
  EXPECT_EQ(OpenAiFieldName("idsx"), "idsx");
  EXPECT_EQ(OpenAiFieldName("textual"), "textual");
  EXPECT_EQ(OpenAiFieldName("params"), "params");
  EXPECT_EQ(OpenAiFieldName("parameters"), "parameters");
}

TEST(HttpErrorsTest, ErrorBodyHasTheOpenAiShape) {
  const auto body = OpenAiErrorBody("too large", "invalid_request_error", nullptr, "request_too_large");
  EXPECT_EQ(body.dump(),
            R"({"error":{"code":"request_too_large","message":"too large","param":null,"type":"invalid_request_error"}})");
  EXPECT_TRUE(OpenAiErrorBody("m", "t", "p", "")["error"]["code"].is_null());
}

}  // namespace
}  // namespace unmask::scheduler::http
