// Status -> HTTP status and OpenAI error object: the statuses the OpenAI SDKs turn into their
// exception classes, and the param that names the field.
#include "services/scheduler/http/http_errors.h"

#include <gtest/gtest.h>

#include "common/auth/api_keys.h"
#include "common/auth/sha256.h"
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
      {ResourceExhaustedError("the queue is full (5 jobs); try again later"), 429, "rate_limit_error"},
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

TEST(HttpErrorsTest, QueueFullIsToldApartFromDoesNotFit) {
  EXPECT_TRUE(IsQueueFull(ResourceExhaustedError("the queue is full (1000 jobs); try again later")));
  EXPECT_FALSE(IsQueueFull(ResourceExhaustedError("gen_length 4096 does not fit")));
  EXPECT_FALSE(IsQueueFull(InvalidArgumentError("the queue is full")));  // only RESOURCE_EXHAUSTED
  EXPECT_EQ(ToHttpError(ResourceExhaustedError("the queue is full (0 jobs); try again later")).body["error"]["code"], "queue_full");
}

TEST(HttpErrorsTest, AnUnknownModelIsModelNotFound) {
  const HttpError e = ToHttpError(NotFoundError("model: no executor serves 'x' and no model root holds it"));
  EXPECT_EQ(e.body["error"]["param"], "model");
  EXPECT_EQ(e.body["error"]["code"], "model_not_found");
}

TEST(HttpErrorsTest, TheCoresFieldNamesBecomeTheHttpApisNames) {
  EXPECT_EQ(ParamOf("params.gen_length: must be in [1, 16384], got 0"), "max_tokens");
  EXPECT_EQ(ParamOf("params.steps: must be >= 1, got 0"), "steps");
  EXPECT_EQ(ParamOf("params: steps (100) must be <= gen_length (64)"), "steps");
  EXPECT_EQ(ParamOf("chat.messages[1].role: must be system, user or assistant"), "messages[1].role");
  EXPECT_EQ(ParamOf("text: must not be empty"), "prompt");
  EXPECT_EQ(ParamOf("ids[3]: token id 99999 is outside the vocabulary"), "prompt[3]");
  EXPECT_EQ(ParamOf("priority: must be in [-10, 10], got 11"), "priority");
  EXPECT_TRUE(ParamOf("the queue is full (3 jobs)").is_null());
  EXPECT_TRUE(ParamOf("").is_null());
  EXPECT_TRUE(ParamOf(": nothing").is_null());
}

TEST(HttpErrorsTest, ErrorBodyHasTheOpenAiShape) {
  const auto body = OpenAiErrorBody("too large", "invalid_request_error", nullptr, "request_too_large");
  EXPECT_EQ(body.dump(),
            R"({"error":{"code":"request_too_large","message":"too large","param":null,"type":"invalid_request_error"}})");
  EXPECT_TRUE(OpenAiErrorBody("m", "t", "p", "")["error"]["code"].is_null());
}

}  // namespace
}  // namespace unmask::scheduler::http
