// Infilling, templates with holes and logprobs (issue 31) through the gRPC door, on the committed
// trained model (models/unmask-kjv) served by the real loader, executor and scheduler: a suffix is
// kept out of the answer and steers the gap; a template's fixed text comes back byte for byte with
// every hole filled; each generated token carries its log-probability and top alternatives, in the
// step events and in the completion, and with prompt_logprobs every prompt token but the first
// its own; bad requests are refused naming the field.
#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/e2e/stack.h"
#include "unmask/v1/scheduler.grpc.pb.h"

namespace unmask::testing {
namespace {

using ::testing::HasSubstr;

struct Outcome {
  grpc::Status status;
  std::vector<v1::StepEvent> steps;
  v1::Accepted accepted;
  v1::Completed completed;
  bool have_completed = false;
  std::string failed;
};

class GrpcCanvasEndToEndTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    stack_ = new Stack(UNMASK_MODELS_DIR "/unmask-kjv", "unmask-kjv");
    stack_->StartLoader();
    stack_->StartExecutor();
    const int s = stack_->StartScheduler();
    stub_ = v1::Scheduler::NewStub(
                grpc::CreateChannel(stack_->scheduler_address(s), grpc::InsecureChannelCredentials()))
                .release();
  }
  static void TearDownTestSuite() {
    delete stub_;
    delete stack_;
  }

  static v1::GenerateRequest Request(const std::string& prompt) {
    v1::GenerateRequest r;
    r.set_model("unmask-kjv");
    r.set_text(prompt);
    return r;
  }

  static Outcome Run(const v1::GenerateRequest& r) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    auto stream = stub_->Generate(&ctx, r);
    Outcome out;
    v1::JobEvent ev;
    while (stream->Read(&ev)) {
      if (ev.has_accepted()) out.accepted = ev.accepted();
      if (ev.has_step()) out.steps.push_back(ev.step());
      if (ev.has_completed()) {
        out.completed = ev.completed();
        out.have_completed = true;
      }
      if (ev.has_failed()) out.failed = ev.failed().message();
    }
    out.status = stream->Finish();
    return out;
  }

  static void ExpectRefused(const v1::GenerateRequest& r, const std::string& field) {
    const Outcome out = Run(r);
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << field << ": " << out.status.error_message();
    EXPECT_THAT(out.status.error_message(), HasSubstr(field));
    EXPECT_FALSE(out.have_completed);
  }

  static Stack* stack_;
  static v1::Scheduler::Stub* stub_;
};

Stack* GrpcCanvasEndToEndTest::stack_ = nullptr;
v1::Scheduler::Stub* GrpcCanvasEndToEndTest::stub_ = nullptr;

TEST_F(GrpcCanvasEndToEndTest, ASuffixIsInfilledAndStaysOutOfTheAnswer) {
  v1::GenerateRequest r = Request("In the beginning God created");
  r.set_suffix(" and the earth was without form, and void.");
  r.mutable_params()->set_gen_length(8);
  r.mutable_params()->set_block_length(8);
  r.mutable_params()->set_steps(8);
  const Outcome filled = Run(r);
  ASSERT_TRUE(filled.status.ok()) << filled.status.error_message();
  ASSERT_TRUE(filled.have_completed) << filled.failed;
  EXPECT_EQ(filled.completed.ids_size(), 8);
  EXPECT_FALSE(filled.completed.text().empty());
  EXPECT_THAT(filled.completed.text(), ::testing::Not(HasSubstr("without form")));
  for (const auto& step : filled.steps)
    for (auto pos : step.unmasked().positions()) EXPECT_LT(pos, 8) << "a suffix position was streamed";
  // The same request without the suffix continues the prompt: the suffix steers the gap.
  r.clear_suffix();
  const Outcome continued = Run(r);
  ASSERT_TRUE(continued.have_completed) << continued.failed;
  EXPECT_NE(filled.completed.text(), continued.completed.text());
}

TEST_F(GrpcCanvasEndToEndTest, ATemplateComesBackWithItsFixedTextAndEveryHoleFilled) {
  v1::GenerateRequest r = Request("And God said,");
  r.set_template_text("{\"speaker\": \"<hole:2>\", \"words\": \"<hole:10>\"}");
  r.mutable_params()->set_logprobs(2);
  const Outcome out = Run(r);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  ASSERT_TRUE(out.have_completed) << out.failed;
  const std::string text = out.completed.text();
  EXPECT_TRUE(std::regex_match(text, std::regex(R"(\{"speaker": "[^"]*", "words": "[^"]*"\})"))) << text;
  // gen_length is the template's length; the holes are 12 of its tokens.
  EXPECT_EQ(out.accepted.params().gen_length(), out.completed.ids_size());
  ASSERT_EQ(out.completed.logprobs_size(), 12) << "one logprob per hole";
  std::int64_t last = -1;
  for (const auto& lp : out.completed.logprobs()) {
    EXPECT_GT(lp.position(), last);
    last = lp.position();
    EXPECT_EQ(lp.token(), out.completed.ids(static_cast<int>(lp.position())));
    EXPECT_LE(lp.logprob(), 0.0);
    ASSERT_EQ(lp.top_size(), 2);
    EXPECT_GE(lp.top(0).logprob(), lp.top(1).logprob());
    EXPECT_EQ(lp.top(0).token(), lp.token()) << "greedy: the chosen token is the most likely";
    EXPECT_DOUBLE_EQ(lp.top(0).logprob(), lp.logprob());
    EXPECT_EQ(lp.top(0).text(), lp.text());
  }
  // The tokens' texts, in order, spell the holes' text inside the filled template.
  std::string holes;
  for (const auto& lp : out.completed.logprobs()) holes += lp.text();
  EXPECT_FALSE(holes.empty());
  int streamed = 0;
  for (const auto& step : out.steps) {
    ASSERT_EQ(step.logprobs_size(), step.unmasked().positions_size());
    for (int i = 0; i < step.logprobs_size(); ++i) EXPECT_EQ(step.logprobs(i).position(), step.unmasked().positions(i));
    streamed += step.logprobs_size();
  }
  EXPECT_EQ(streamed, 12);
}

TEST_F(GrpcCanvasEndToEndTest, PromptLogprobsScoreEveryPromptTokenButTheFirstOnTheFirstStepAndInTheResult) {
  const std::string prompt = "In the beginning God created the heaven";
  v1::GenerateRequest r = Request(prompt);
  r.mutable_params()->set_prompt_logprobs(3);
  const Outcome out = Run(r);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  ASSERT_TRUE(out.have_completed) << out.failed;
  const auto& scored = out.completed.prompt_logprobs();
  ASSERT_EQ(scored.size(), out.accepted.prompt_tokens() - 1) << "every token but the first";
  EXPECT_EQ(out.completed.logprobs_size(), 0) << "the generated tokens' are params.logprobs, not asked";
  std::string text;
  for (int i = 0; i < scored.size(); ++i) {
    const auto& lp = scored[i];
    EXPECT_EQ(lp.position(), i + 1);
    EXPECT_LT(lp.logprob(), 0.0);
    ASSERT_EQ(lp.top_size(), 3);
    EXPECT_GE(lp.top(0).logprob(), lp.top(1).logprob());
    EXPECT_GE(lp.top(1).logprob(), lp.top(2).logprob());
    EXPECT_LE(lp.logprob(), lp.top(0).logprob() + 1e-9);
    text += lp.text();
  }
  // The tokens' texts after the first spell the prompt after its first token.
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(prompt.substr(prompt.size() - text.size()), text);
  // The first step carries the same values; no later step carries any.
  ASSERT_FALSE(out.steps.empty());
  ASSERT_EQ(out.steps[0].prompt_logprobs_size(), scored.size());
  for (int i = 0; i < scored.size(); ++i) EXPECT_DOUBLE_EQ(out.steps[0].prompt_logprobs(i).logprob(), scored[i].logprob());
  for (std::size_t s = 1; s < out.steps.size(); ++s) EXPECT_EQ(out.steps[s].prompt_logprobs_size(), 0) << s;
  // Deterministic: the same prompt scores the same however it is generated after.
  r.mutable_params()->set_temperature(0.7);
  r.mutable_params()->set_seed(5);
  const Outcome again = Run(r);
  ASSERT_TRUE(again.have_completed) << again.failed;
  ASSERT_EQ(again.completed.prompt_logprobs_size(), scored.size());
  for (int i = 0; i < scored.size(); ++i)
    EXPECT_DOUBLE_EQ(again.completed.prompt_logprobs(i).logprob(), scored[i].logprob()) << i;
}

TEST_F(GrpcCanvasEndToEndTest, BadCanvasRequestsAreRefusedByField) {
  v1::GenerateRequest r = Request("And God said,");
  r.set_template_text("no holes here");
  ExpectRefused(r, "template_text");
  r.set_template_text("a <hole:0> b");
  ExpectRefused(r, "template_text");
  r.set_template_text("a <hole:x> b");
  ExpectRefused(r, "template_text");
  r.set_template_text("a <hole:3> b");
  r.mutable_params()->set_gen_length(7);  // the template is not 7 tokens
  ExpectRefused(r, "params.gen_length");
  r = Request("And God said,");
  std::string long_suffix;
  for (int i = 0; i < 3000; ++i) long_suffix += " and";
  r.set_suffix(long_suffix);
  ExpectRefused(r, "suffix");
  r = Request("And God said,");
  r.mutable_params()->set_logprobs(21);
  ExpectRefused(r, "logprobs");
  r = Request("And God said,");
  r.mutable_params()->set_prompt_logprobs(21);
  ExpectRefused(r, "prompt_logprobs");
  r.mutable_params()->set_prompt_logprobs(-1);
  ExpectRefused(r, "prompt_logprobs");
}

}  // namespace
}  // namespace unmask::testing
