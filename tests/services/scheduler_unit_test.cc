// Scheduler logic without servers: request validation (every field), dispatch policies, and the
// clamp adapter's reporting.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "services/scheduler/clamp_adapter.h"
#include "services/scheduler/dispatch_policy.h"
#include "services/scheduler/likelihood_request.h"
#include "services/scheduler/request_validation.h"

namespace unmask::scheduler {
namespace {

using ::testing::HasSubstr;

v1::GenerateRequest Valid() {
  v1::GenerateRequest r;
  r.set_model("m");
  r.mutable_ids()->add_ids(1);
  return r;
}

TEST(RequestValidationTest, AValidRequestPasses) { EXPECT_TRUE(ValidateGenerateRequest(Valid()).ok()); }

TEST(RequestValidationTest, EveryBadFieldIsNamedWithItsRange) {
  struct Case {
    std::function<void(v1::GenerateRequest&)> edit;
    const char* expected;
  } cases[] = {
      {[](auto& r) { r.set_model(""); }, "model: must name a model"},
      {[](auto& r) { r.set_model(std::string(300, 'x')); }, "model: must be at most 256 characters"},
      {[](auto& r) { r.clear_ids(); }, "prompt: set one of text, chat or ids"},
      {[](auto& r) { r.set_text(""); }, "text: must not be empty"},
      {[](auto& r) { r.mutable_ids()->add_ids(-3); }, "ids[1]: must be >= 0, got -3"},
      {[](auto& r) { r.mutable_ids()->clear_ids(); }, "ids: must hold at least one token id"},
      {[](auto& r) { r.mutable_chat(); }, "chat.messages: must hold at least one message"},
      {[](auto& r) {
         auto* m = r.mutable_chat()->add_messages();
         m->set_role("robot");
       },
       "chat.messages[0].role: must be system, user, assistant or tool, got 'robot'"},
      {[](auto& r) {
         r.mutable_chat()->add_messages()->set_role("user");
         r.mutable_chat()->add_messages()->set_role("system");
         r.mutable_chat()->add_messages()->set_role("user");
       },
       "chat.messages[1].role: system is allowed only as the first message"},
      {[](auto& r) {
         r.mutable_chat()->add_messages()->set_role("user");
         r.mutable_chat()->add_messages()->set_role("assistant");
       },
       "chat.messages: must end with a user message"},
      {[](auto& r) { r.mutable_params()->set_gen_length(0); }, "params.gen_length: must be in [1, 16384], got 0"},
      {[](auto& r) { r.mutable_params()->set_gen_length(20000); }, "params.gen_length: must be in [1, 16384]"},
      {[](auto& r) { r.mutable_params()->set_block_length(-1); }, "params.block_length: must be >= 1"},
      {[](auto& r) { r.mutable_params()->set_steps(0); }, "params.steps: must be >= 1"},
      {[](auto& r) { r.mutable_params()->set_temperature(-0.5); }, "params.temperature: must be in [0, 100] (0 = greedy), got -0.5"},
      {[](auto& r) { r.mutable_params()->set_cfg_scale(1e9); }, "params.cfg_scale: must be in [0, 100]"},
      {[](auto& r) { r.mutable_params()->set_remasking(static_cast<v1::Remasking>(9)); }, "params.remasking"},
      {[](auto& r) { r.mutable_params()->set_attention_query_chunk(-4); },
       "params.attention_query_chunk: must be in [0, 1048576] (0 = the executor's default), got -4"},
      {[](auto& r) { r.mutable_params()->set_sampler("warp"); }, "params.sampler"},
      {[](auto& r) { r.mutable_params()->set_threshold(1.5); }, "params.threshold: must be in [0, 1]"},
      {[](auto& r) { r.mutable_params()->set_factor(-1); }, "params.factor: must be in (0, 1e+06], got -1"},
      {[](auto& r) { r.mutable_params()->set_sampler("dual_cache"); r.mutable_params()->set_top_p(0.9); },
       "params.top_p: only samplers 'llada2', 'llada21' (LLaDA2's block diffusion) and 'dream' use it; sampler 'dual_cache' has no such option"},
      {[](auto& r) { r.mutable_params()->set_sampler("llada2"); r.mutable_params()->set_top_k(-2); },
       "params.top_k: must be >= 0 (0 = off), got -2"},
      {[](auto& r) { r.mutable_params()->set_sampler("llada2"); r.mutable_params()->set_minimal_topk(-1); },
       "params.minimal_topk: must be in [1, gen_length (128)], got -1"},
      {[](auto& r) { r.mutable_params()->set_sampler("llada2"); r.mutable_params()->set_cfg_scale(2); },
       "params.cfg_scale: sampler 'llada2' has no classifier-free guidance"},
      {[](auto& r) { r.mutable_params()->set_top_p(3); }, "params.top_p: must be in (0, 1] (1 = off), got 3"},
      {[](auto& r) { r.set_priority(11); }, "priority: must be in [-10, 10], got 11"},
      {[](auto& r) { r.set_deadline_seconds(-1); }, "deadline_seconds: must be in [0, 604800]"},
      {[](auto& r) { r.set_idempotency_key("has space"); }, "idempotency_key: must be printable ASCII without spaces"},
      {[](auto& r) { r.set_idempotency_key(std::string(200, 'k')); }, "idempotency_key: must be at most 128 characters"},
      {[](auto& r) { r.set_n(17); }, "n: must be in [0, 16] (0 = 1), got 17"},
      {[](auto& r) { r.set_n(-1); }, "n: must be in [0, 16] (0 = 1), got -1"},
  };
  for (const auto& c : cases) {
    v1::GenerateRequest r = Valid();
    c.edit(r);
    Status s = ValidateGenerateRequest(r);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.expected;
    EXPECT_THAT(s.message(), HasSubstr(c.expected));
  }
}

TEST(RequestValidationTest, TheBadFieldIsInTheDetailNotOnlyTheMessage) {
  struct Case {
    std::function<void(v1::GenerateRequest&)> edit;
    const char* field;  // as the gRPC API names it
  } cases[] = {
      {[](auto& r) { r.set_model(""); }, "model"},
      {[](auto& r) { r.set_text(""); }, "text"},
      {[](auto& r) { r.mutable_chat(); }, "chat.messages"},
      {[](auto& r) { r.mutable_chat()->add_messages()->set_role("robot"); }, "chat.messages[0].role"},
      {[](auto& r) { r.mutable_ids()->add_ids(-3); }, "ids[1]"},
      {[](auto& r) { r.clear_ids(); }, "prompt"},
      {[](auto& r) { r.set_priority(11); }, "priority"},
      {[](auto& r) { r.set_deadline_seconds(-1); }, "deadline_seconds"},
      {[](auto& r) { r.set_idempotency_key("has space"); }, "idempotency_key"},
      {[](auto& r) { r.set_n(kMaxChoices + 1); }, "n"},
      {[](auto& r) { r.set_n(-3); }, "n"},
  };
  for (const auto& c : cases) {
    v1::GenerateRequest r = Valid();
    c.edit(r);
    const Status s = ValidateGenerateRequest(r);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.field;
    EXPECT_EQ(s.field(), c.field) << s.ToString();
  }
}

TEST(RequestValidationTest, NIsOneToSixteenChoicesAndZeroIsOne) {
  for (int n : {0, 1, 2, kMaxChoices}) {
    v1::GenerateRequest r = Valid();
    r.set_n(n);
    EXPECT_TRUE(ValidateGenerateRequest(r).ok()) << n;
    EXPECT_EQ(ChoiceCount(r), n == 0 ? 1 : n);
  }
}

TEST(RequestValidationTest, EarlyStopIsAcceptedEitherWayWithEverySampler) {
  // A bool has no bad value on the wire; what matters is that no sampler refuses it (the clamp
  // may swap reference for a fast mode, where an early_stop of false then applies).
  for (const char* sampler : {"", "reference", "block_logits", "dual_cache", "prefix_cache+threshold", "factor"}) {
    for (bool early_stop : {false, true}) {
      v1::GenerateRequest r = Valid();
      r.mutable_params()->set_sampler(sampler);
      r.mutable_params()->set_early_stop(early_stop);
      EXPECT_TRUE(ValidateGenerateRequest(r).ok()) << sampler << " " << early_stop;
    }
  }
}

ExecutorSnapshot Exec(const std::string& address, int running, int max, bool healthy = true, const std::string& model = "m") {
  ExecutorSnapshot e;
  e.address = address;
  e.healthy = healthy;
  e.models = {model};
  e.running = running;
  e.max_concurrent = max;
  return e;
}

v1::GenerateRequest LikelihoodOfText(const std::string& continuation) {
  v1::GenerateRequest r;
  r.set_model("m");
  r.set_text("In the beginning");
  r.set_continuation(continuation);
  r.mutable_params()->mutable_likelihood()->set_mc_num(8);
  r.mutable_params()->mutable_likelihood()->set_batch_size(4);
  return r;
}

TEST(RequestValidationTest, ALikelihoodRequestTakesTextWithItsContinuationOrIdsWithTheirCount) {
  EXPECT_TRUE(ValidateGenerateRequest(LikelihoodOfText(" God created")).ok());
  v1::GenerateRequest ids = Valid();
  ids.mutable_ids()->add_ids(2);
  ids.mutable_params()->mutable_likelihood()->set_continuation_tokens(1);
  EXPECT_TRUE(ValidateGenerateRequest(ids).ok());
}

TEST(RequestValidationTest, EveryBadLikelihoodFieldIsNamed) {
  struct Bad {
    v1::GenerateRequest r;
    const char* field;
  };
  std::vector<Bad> bad;
  auto add = [&](const char* field, const std::function<void(v1::GenerateRequest&)>& change) {
    v1::GenerateRequest r = LikelihoodOfText(" God created");
    change(r);
    bad.push_back({r, field});
  };
  add("continuation", [](auto& r) { r.clear_continuation(); });
  add("continuation", [](auto& r) { r.mutable_params()->clear_likelihood(); });  // a continuation alone
  add("continuation", [](auto& r) { r.set_continuation(std::string(kMaxPromptBytes + 1, 'a')); });
  add("params.likelihood.continuation_tokens",
      [](auto& r) { r.mutable_params()->mutable_likelihood()->set_continuation_tokens(2); });
  add("continuation", [](auto& r) { r.mutable_ids()->add_ids(1); });  // ids with a text continuation
  add("params.likelihood", [](auto& r) { r.mutable_chat()->add_messages()->set_role("user"); });
  add("suffix", [](auto& r) { r.set_suffix(" and the earth"); });
  add("template_text", [](auto& r) { r.set_template_text("<hole:4>"); });
  add("n", [](auto& r) { r.set_n(2); });
  add("params.gen_length", [](auto& r) { r.mutable_params()->set_gen_length(8); });
  add("params.block_length", [](auto& r) { r.mutable_params()->set_block_length(8); });
  add("params.steps", [](auto& r) { r.mutable_params()->set_steps(8); });
  add("params.likelihood.mc_num", [](auto& r) { r.mutable_params()->mutable_likelihood()->set_mc_num(-3); });
  add("params.likelihood.batch_size", [](auto& r) { r.mutable_params()->mutable_likelihood()->set_batch_size(3); });
  add("params.logprobs", [](auto& r) { r.mutable_params()->set_logprobs(1); });
  v1::GenerateRequest ids = Valid();
  ids.mutable_params()->mutable_likelihood();  // no count
  bad.push_back({ids, "params.likelihood.continuation_tokens"});
  for (const Bad& b : bad) {
    const Status s = ValidateGenerateRequest(b.r);
    ASSERT_FALSE(s.ok()) << b.field;
    EXPECT_EQ(s.field(), b.field) << s.ToString();
  }
}

TEST(RequestValidationTest, AScoreOnlyRequestSetsNoLengthAndNoCanvas) {
  v1::GenerateRequest r = Valid();
  r.mutable_params()->set_score_only(true);
  r.mutable_params()->set_prompt_logprobs(0);
  EXPECT_TRUE(ValidateGenerateRequest(r).ok());
  for (const char* field : {"params.gen_length", "params.block_length", "params.steps", "suffix", "n",
                            "params.score_only", "params.logprobs"}) {
    v1::GenerateRequest bad = r;
    const std::string f = field;
    if (f == "params.gen_length") bad.mutable_params()->set_gen_length(4);
    if (f == "params.block_length") bad.mutable_params()->set_block_length(4);
    if (f == "params.steps") bad.mutable_params()->set_steps(4);
    if (f == "suffix") bad.set_suffix(" x");
    if (f == "n") bad.set_n(2);
    if (f == "params.score_only") bad.mutable_params()->clear_prompt_logprobs();
    if (f == "params.logprobs") bad.mutable_params()->set_logprobs(1);
    const Status s = ValidateGenerateRequest(bad);
    ASSERT_FALSE(s.ok()) << field;
    EXPECT_EQ(s.field(), field) << s.ToString();
  }
  const v1::GenerationParams job = LikelihoodJobParams(r.params(), 0);
  EXPECT_EQ(job.gen_length(), 1);
  EXPECT_EQ(job.steps(), 1);
  EXPECT_FALSE(job.has_likelihood());
}

TEST(LikelihoodJobParamsTest, TheJobGeneratesOnePositionItNeverRunsAndKnowsItsContinuation) {
  v1::GenerationParams asked;
  asked.mutable_likelihood()->set_mc_num(8);
  const v1::GenerationParams job = LikelihoodJobParams(asked, 5);
  EXPECT_EQ(job.likelihood().continuation_tokens(), 5);
  EXPECT_EQ(job.likelihood().mc_num(), 8);
  EXPECT_EQ(job.gen_length(), 1);
  EXPECT_EQ(job.block_length(), 1);
  EXPECT_EQ(job.steps(), 1);
  asked.mutable_likelihood()->set_continuation_tokens(3);  // ids: the count given stays
  EXPECT_EQ(LikelihoodJobParams(asked, 0).likelihood().continuation_tokens(), 3);
  v1::GenerationParams plain;
  plain.set_gen_length(64);
  EXPECT_EQ(LikelihoodJobParams(plain, 0).gen_length(), 64) << "not a likelihood request: unchanged";
}

TEST(DispatchPolicyTest, LeastBusyPicksTheLowestLoadRelativeToCapacity) {
  Dispatcher d(DispatchPolicy::kLeastBusy, 0);
  std::vector<ExecutorSnapshot> ex = {Exec("a", 3, 4), Exec("b", 1, 4), Exec("c", 1, 8)};
  EXPECT_EQ(d.Pick(ex, "m"), 2);  // 1/8 < 1/4 < 3/4
  ex[2].running = 7;
  EXPECT_EQ(d.Pick(ex, "m"), 1);
}

// Continuous batching: an executor whose job budget is mostly charged counts as busy even with
// free job slots.
TEST(DispatchPolicyTest, LeastBusyCountsTheJobBudgetInUse) {
  Dispatcher d(DispatchPolicy::kLeastBusy, 0);
  std::vector<ExecutorSnapshot> ex = {Exec("a", 1, 8), Exec("b", 2, 8)};
  ex[0].job_budget_bytes = ex[1].job_budget_bytes = 1000;
  ex[0].job_bytes_in_use = 900;  // 1/8 of the slots, 90% of the memory
  ex[1].job_bytes_in_use = 300;  // 2/8 of the slots, 30% of the memory
  EXPECT_EQ(d.Pick(ex, "m"), 1);
  ex[0].job_bytes_in_use = 100;
  EXPECT_EQ(d.Pick(ex, "m"), 0);
}

TEST(DispatchPolicyTest, AJobFitsTheSmallerOfTheFreeMemoryAndTheJobBudget) {
  ExecutorSnapshot e = Exec("a", 0, 8);
  e.budget_bytes = 1000;
  EXPECT_EQ(FitBudget(e), 1000u) << "an executor that reports no job budget";
  e.job_budget_bytes = 600;
  EXPECT_EQ(FitBudget(e), 600u);
  e.job_budget_bytes = 4000;
  EXPECT_EQ(FitBudget(e), 1000u);
}

TEST(DispatchPolicyTest, SkipsUnhealthyFullAndOtherModels) {
  Dispatcher d(DispatchPolicy::kLeastBusy, 0);
  std::vector<ExecutorSnapshot> ex = {Exec("a", 0, 4, false), Exec("b", 4, 4), Exec("c", 0, 4, true, "other")};
  EXPECT_EQ(d.Pick(ex, "m"), -1);
  ex.push_back(Exec("d", 3, 4));
  EXPECT_EQ(d.Pick(ex, "m"), 3);
}

TEST(DispatchPolicyTest, PerExecutorLimitCapsTheExecutorsOwn) {
  Dispatcher d(DispatchPolicy::kLeastBusy, 2);
  std::vector<ExecutorSnapshot> ex = {Exec("a", 2, 8)};
  EXPECT_EQ(d.Pick(ex, "m"), -1);
  ex[0].running = 1;
  EXPECT_EQ(d.Pick(ex, "m"), 0);
}

TEST(DispatchPolicyTest, RoundRobinCyclesAndSkipsFullExecutors) {
  Dispatcher d(DispatchPolicy::kRoundRobin, 0);
  std::vector<ExecutorSnapshot> ex = {Exec("a", 0, 4), Exec("b", 0, 4), Exec("c", 0, 4)};
  EXPECT_EQ(d.Pick(ex, "m"), 0);
  EXPECT_EQ(d.Pick(ex, "m"), 1);
  EXPECT_EQ(d.Pick(ex, "m"), 2);
  EXPECT_EQ(d.Pick(ex, "m"), 0);
  ex[1].running = 4;
  EXPECT_EQ(d.Pick(ex, "m"), 2);
}

TEST(DispatchPolicyTest, RandomSpreadsOverEligibleExecutorsOnly) {
  Dispatcher d(DispatchPolicy::kRandom, 0, /*seed=*/42);
  std::vector<ExecutorSnapshot> ex = {Exec("a", 0, 4), Exec("b", 4, 4), Exec("c", 0, 4)};
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 300; ++i) ++counts[d.Pick(ex, "m")];
  EXPECT_EQ(counts[1], 0);
  EXPECT_GT(counts[0], 50);
  EXPECT_GT(counts[2], 50);
}

TEST(DispatchPolicyTest, ParsesPolicyNames) {
  EXPECT_EQ(*ParseDispatchPolicy("round_robin"), DispatchPolicy::kRoundRobin);
  EXPECT_THAT(ParseDispatchPolicy("fastest").status().message(), HasSubstr("least_busy, round_robin, random"));
}

ClampInput SmallBudgetInput(std::uint64_t budget) {
  ClampInput in;
  in.config.d_model = 512;
  in.config.n_heads = in.config.n_kv_heads = 8;
  in.config.n_layers = 8;
  in.config.mlp_hidden_size = 1408;
  in.params.gen_length = 1024;
  in.params.block_length = 32;
  in.params.steps = 1024;
  in.prompt_length = 32;
  in.budget_bytes = budget;
  return in;
}

TEST(ClampAdapterTest, ReportsEveryChangeAndKeepsTheParametersValid) {
  auto clamp = MakeClamper(fitting::ClampPolicy::kStandard, 4);
  ClampInput in = SmallBudgetInput(400ull << 20);
  in.params.temperature = 0.7;  // logits for every position (greedy, the block's only: it would fit)
  auto out = clamp(in);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_LT(out->params.gen_length, 1024);
  EXPECT_EQ(out->params.gen_length % out->params.block_length, 0);
  EXPECT_EQ(out->params.steps % (out->params.gen_length / out->params.block_length), 0);
  bool reported = false;
  for (const auto& a : out->adjustments) {
    if (a.field() == "gen_length") {
      reported = true;
      EXPECT_EQ(a.asked(), "1024");
      EXPECT_EQ(a.applied(), std::to_string(out->params.gen_length));
      EXPECT_FALSE(a.reason().empty());
    }
  }
  EXPECT_TRUE(reported);
}

TEST(ClampAdapterTest, AChosenAttentionChunkIsPassedOnToRun) {
  // Some budget between "fits whole" and "nothing fits" makes the extreme clamp chunk the attention.
  auto clamp = MakeClamper(fitting::ClampPolicy::kExtreme, 4);
  bool chunked = false;
  for (std::uint64_t mib = 4096; mib >= 16 && !chunked; mib /= 2) {
    auto out = clamp(SmallBudgetInput(mib << 20));
    if (!out.ok()) continue;
    for (const auto& a : out->adjustments) {
      if (a.field() != "attention_query_chunk") continue;
      chunked = true;
      EXPECT_EQ(out->params.attention_query_chunk, std::stoll(a.applied())) << mib << " MiB";
      EXPECT_GT(out->params.attention_query_chunk, 0);
    }
  }
  EXPECT_TRUE(chunked) << "no budget made the clamp chunk the attention";
}

TEST(ClampAdapterTest, NothingFitsIsResourceExhausted) {
  auto clamp = MakeClamper(fitting::ClampPolicy::kStandard, 4);
  auto out = clamp(SmallBudgetInput(1 << 20));
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
}

TEST(ClampAdapterTest, OffChangesNothingAndUnknownBudgetSkipsTheClamp) {
  auto off = MakeClamper(fitting::ClampPolicy::kOff, 4)(SmallBudgetInput(400ull << 20));
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->params.gen_length, 1024);
  auto unknown = MakeClamper(fitting::ClampPolicy::kStandard, 4)(SmallBudgetInput(0));
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->params.gen_length, 1024);
  EXPECT_TRUE(unknown->adjustments.empty());
}

}  // namespace
}  // namespace unmask::scheduler

namespace unmask::scheduler {
namespace {

// A job that fails after acceptance keeps its error's detail in JobEvent.failed (and so in the
// job's event log, Watch and the HTTP error).
TEST(FailedEventTest, KeepsTheDetailOfTheError) {
  const Status error = InvalidFieldError("params.steps", "must be <= gen_length (8), got 16")
                           .WithReason("INVALID_VALUE", {{"limit", "8"}});
  const v1::Failed f = FailedOf(error);
  EXPECT_EQ(f.code(), static_cast<int>(StatusCode::kInvalidArgument));
  EXPECT_EQ(f.field(), "params.steps");
  EXPECT_EQ(f.reason(), "INVALID_VALUE");
  EXPECT_EQ(f.metadata().at("limit"), "8");
  const Status back = StatusOf(f);
  EXPECT_EQ(back.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(back.message(), error.message());
  EXPECT_EQ(back.field(), "params.steps");
  EXPECT_EQ(back.reason(), "INVALID_VALUE");

  const v1::Failed plain = FailedOf(InternalError("boom"));
  EXPECT_TRUE(plain.field().empty() && plain.reason().empty());
  EXPECT_EQ(StatusOf(plain).detail(), nullptr);
  v1::Failed ok_code;
  ok_code.set_message("no code");
  EXPECT_EQ(StatusOf(ok_code).code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace unmask::scheduler
