// Tool calling end to end: the tiny Dream checkpoint (its chat template is Qwen2.5's, tools
// branch included) served by the real loader, executor and scheduler, asked through the
// OpenAI-compatible HTTP API and the gRPC API as a user would. The tools and the earlier calls
// and answers reach the prompt; a call forced by tool_choice comes back as tool_calls or, when
// the model does not complete it (this model has random weights), as text that begins with the
// forced opening, the same whole and streamed, and the same through gRPC and from the stored job;
// bad tool fields are refused naming them. (That a completed call parses into tool_calls is
// tested on the output text: tests/services/tool_calls_test.cc, tests/http/tool_calls_output_test.cc.)
#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

#include "tests/e2e/cli_json.h"
#include "tests/e2e/stack.h"
#include "tests/fixtures/test_paths.h"
#include "unmask/v1/scheduler.grpc.pb.h"

namespace unmask::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using nlohmann::json;

constexpr char kOpening[] = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ";

json Tools() {
  return json::parse(R"([{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");
}

json Ask(json extra = json::object()) {
  json body = {{"model", "tiny-dream"},
               {"messages", json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}})},
               {"max_tokens", 16},
               {"temperature", 0}};
  body.update(extra);
  return body;
}

class ToolsEndToEndTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    stack_ = new Stack(TestDataPath("tiny-dream"), "tiny-dream");
    stack_->StartLoader();
    stack_->StartExecutor();
    scheduler_ = stack_->StartScheduler({"--http-port", "0"});
    stub_ = v1::Scheduler::NewStub(
                grpc::CreateChannel(stack_->scheduler_address(scheduler_), grpc::InsecureChannelCredentials()))
                .release();
  }
  static void TearDownTestSuite() {
    delete stub_;
    delete stack_;
  }

  static httplib::Result Post(const json& body) {
    httplib::Client client("127.0.0.1", HttpPort(stack_->scheduler(scheduler_)));
    client.set_read_timeout(120);
    return client.Post("/v1/chat/completions", body.dump(), "application/json");
  }
  static json Answer(const json& body) {
    auto res = Post(body);
    EXPECT_TRUE(res) << httplib::to_string(res.error());
    if (!res) return nullptr;
    EXPECT_EQ(res->status, 200) << res->body;
    return json::parse(res->body);
  }

  static Stack* stack_;
  static int scheduler_;
  static v1::Scheduler::Stub* stub_;
};
Stack* ToolsEndToEndTest::stack_ = nullptr;
int ToolsEndToEndTest::scheduler_ = 0;
v1::Scheduler::Stub* ToolsEndToEndTest::stub_ = nullptr;

// The message of a forced call: tool_calls naming the tool with a JSON object, or the opening
// and what the model wrote after it, as content.
void ExpectCallOrOpening(const json& message, const json& finish_reason) {
  if (message.contains("tool_calls")) {
    EXPECT_EQ(finish_reason, "tool_calls");
    EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_TRUE(json::parse(message["tool_calls"][0]["function"]["arguments"].get<std::string>()).is_object());
  } else {
    EXPECT_THAT(message["content"].get<std::string>(), StartsWith(kOpening));
    EXPECT_NE(finish_reason, "tool_calls");
  }
}

TEST_F(ToolsEndToEndTest, TheToolsAndEarlierCallsReachThePrompt) {
  const json plain = Answer(Ask());
  const json offered = Answer(Ask({{"tools", Tools()}}));
  const json forced = Answer(Ask({{"tools", Tools()}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}}));
  const json refused = Answer(Ask({{"tools", Tools()}, {"tool_choice", "none"}}));
  ASSERT_FALSE(plain.is_null() || offered.is_null() || forced.is_null() || refused.is_null());
  const auto tokens = [](const json& r) { return r["usage"]["prompt_tokens"].get<int>(); };
  EXPECT_GT(tokens(offered), tokens(plain) + 50) << "the tools' block is in the prompt";
  EXPECT_GT(tokens(forced), tokens(offered)) << "and the call's opening after it";
  EXPECT_EQ(tokens(refused), tokens(plain)) << "tool_choice none: the template gets no tools";
  ExpectCallOrOpening(forced["choices"][0]["message"], forced["choices"][0]["finish_reason"]);

  // A conversation that called the tool and has its answer: both rendered.
  json history = Ask({{"tools", Tools()}});
  history["messages"].push_back({{"role", "assistant"}, {"content", nullptr},
                                 {"tool_calls", {{{"id", "c1"}, {"type", "function"},
                                                  {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}}}});
  history["messages"].push_back({{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "{\"temp\": 21}"}});
  const json answered = Answer(history);
  ASSERT_FALSE(answered.is_null());
  EXPECT_GT(tokens(answered), tokens(offered) + 20);
}

TEST_F(ToolsEndToEndTest, AForcedCallIsTheSameWholeAndStreamed) {
  const json body = Ask({{"tools", Tools()}, {"tool_choice", "required"}, {"max_tokens", 24}});
  const json whole = Answer(body);
  ASSERT_FALSE(whole.is_null());
  json streamed = body;
  streamed["stream"] = true;
  auto res = Post(streamed);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  std::string content;
  json tool_calls = nullptr, finish_reason = nullptr;
  std::size_t at = 0;
  while ((at = res->body.find("data: {", at)) != std::string::npos) {
    const std::size_t end = res->body.find("\n\n", at);
    const json chunk = json::parse(res->body.substr(at + 6, end - at - 6));
    at = end;
    if (chunk["choices"].empty()) continue;
    const json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("content") && delta["content"].is_string()) content += delta["content"].get<std::string>();
    if (delta.contains("tool_calls")) tool_calls = delta["tool_calls"];
    if (!chunk["choices"][0]["finish_reason"].is_null()) finish_reason = chunk["choices"][0]["finish_reason"];
  }
  const json& message = whole["choices"][0]["message"];
  EXPECT_EQ(finish_reason, whole["choices"][0]["finish_reason"]);
  if (message.contains("tool_calls")) {
    ASSERT_FALSE(tool_calls.is_null());
    EXPECT_EQ(tool_calls[0]["function"], message["tool_calls"][0]["function"]);
  } else {
    EXPECT_EQ(content, message["content"]) << "streamed content adds up to the whole answer";
    EXPECT_THAT(content, StartsWith("<tool_call>\n{\"name\": \""));
  }
}

TEST_F(ToolsEndToEndTest, TheGrpcApiReadsTheSameCallsAndStoresThem) {
  v1::GenerateRequest r;
  r.set_model("tiny-dream");
  auto* m = r.mutable_chat()->add_messages();
  m->set_role("user");
  m->set_content("Weather in Paris?");
  auto* tool = r.mutable_chat()->add_tools();
  tool->set_name("get_weather");
  tool->set_parameters(R"({"type": "object", "properties": {"city": {"type": "string"}}})");
  r.mutable_chat()->set_tool_choice("get_weather");
  r.mutable_params()->set_gen_length(16);
  r.mutable_params()->set_temperature(0);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  auto stream = stub_->Generate(&ctx, r);
  v1::JobEvent ev;
  v1::Completed completed;
  std::string job_id;
  while (stream->Read(&ev)) {
    job_id = ev.job_id();
    if (ev.has_completed()) completed = ev.completed();
  }
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_FALSE(completed.ids().empty());
  for (const auto& call : completed.tool_calls()) {
    EXPECT_EQ(call.name(), "get_weather");
    EXPECT_EQ(call.id().rfind("call_" + job_id + "_", 0), 0u) << call.id();
  }
  if (completed.tool_calls().empty()) {
    EXPECT_EQ(completed.content(), "");
  }
  // The HTTP answer to the same request: calls, or the opening and the same text.
  const json http = Answer(Ask({{"tools", Tools()}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}}));
  ASSERT_FALSE(http.is_null());
  const json& message = http["choices"][0]["message"];
  EXPECT_EQ(message.contains("tool_calls"), completed.tool_calls_size() > 0);
  // The stored job answers with the same calls.
  grpc::ClientContext get_ctx;
  v1::GetJobRequest get;
  get.set_job_id(job_id);
  v1::JobInfo info;
  ASSERT_TRUE(stub_->GetJob(&get_ctx, get, &info).ok());
  EXPECT_EQ(info.result().tool_calls_size(), completed.tool_calls_size());
  EXPECT_EQ(info.result().text(), completed.text());

  // A bad tool field is refused by name, through both doors.
  r.mutable_chat()->set_tool_choice("get_time");
  grpc::ClientContext bad_ctx;
  v1::SubmitResponse submitted;
  const grpc::Status bad = stub_->Submit(&bad_ctx, r, &submitted);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("chat.tool_choice"));
  json unanswered = Ask({{"tools", Tools()}});
  unanswered["messages"].push_back({{"role", "tool"}, {"tool_call_id", "c9"}, {"content", "sunny"}});
  auto res = Post(unanswered);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_EQ(json::parse(res->body)["error"]["param"], "messages[1].tool_call_id") << res->body;
}

// The `unmask` CLI's --tools file (the same JSON the HTTP API takes) and --tool-choice: the same
// prompt as the HTTP API builds, the calls printed; bad flags named.
TEST_F(ToolsEndToEndTest, TheCliTakesAToolsFile) {
  const std::string file = ::testing::TempDir() + "/unmask-tools.json";
  std::ofstream(file) << Tools().dump(2);
  const std::string ask = "generate --model tiny-dream --chat 'Weather in Paris?' --gen-length 16 --temperature 0 --tools " + file;
  CliResult r = stack_->Cli(scheduler_, ask + " --tool-choice get_weather --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json accepted = LastLineWith(r.out, "accepted")["accepted"];
  const json http = Answer(Ask({{"tools", Tools()}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}}));
  ASSERT_FALSE(http.is_null());
  ASSERT_TRUE(accepted.contains("prompt_tokens")) << accepted;
  EXPECT_EQ(std::stoll(accepted["prompt_tokens"].get<std::string>()), http["usage"]["prompt_tokens"].get<std::int64_t>())
      << "the CLI and the HTTP API build the same prompt: " << accepted;
  r = stack_->Cli(scheduler_, ask + " --tool-choice get_time");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("chat.tool_choice"));
  r = stack_->Cli(scheduler_, "generate --model tiny-dream --prompt 'x' --tools " + file);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--tools: needs --chat"));
  const std::string bad = ::testing::TempDir() + "/unmask-bad-tools.json";
  std::ofstream(bad) << R"([{"type": "function", "function": {"name": "get weather"}}])";
  r = stack_->Cli(scheduler_, "generate --model tiny-dream --chat 'x' --tools " + bad);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--tools " + bad + ": tools[0].function.name: must be 1-64 of a-z"));
  r = stack_->Cli(scheduler_, "generate --model tiny-dream --chat 'x' --tools /no/such/file.json");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--tools /no/such/file.json: cannot read it"));
  std::remove(file.c_str());
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace unmask::testing
