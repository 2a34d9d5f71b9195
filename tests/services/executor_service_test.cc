// Loader + executor over real gRPC on port 0 with the golden checkpoint: golden outputs and
// per-step events through Run, cancellation, deadlines, batching, bad requests, capacity.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/generation/params_proto.h"
#include "common/sampler/likelihood.h"
#include "common/sampler/prompt_logprobs.h"
#include "services/common/grpc_status.h"
#include "services/common/server_runner.h"
#include "services/executor/executor_core.h"
#include "services/executor/executor_grpc.h"
#include "services/executor/loader_client.h"
#include "services/loader/loader_core.h"
#include "services/loader/loader_grpc.h"
#include "tests/fixtures/temp_checkpoint.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::executor {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using nlohmann::json;

struct RunOutcome {
  grpc::Status status;
  std::vector<v1::StepEvent> steps;
  v1::RunCompleted completed;
};

class ExecutorServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new unmask::testing::TempDir();
    fs::create_directories(root_->File("tiny-llada"));
    for (const auto& f : fs::directory_iterator(unmask::testing::TestDataPath("tiny-llada")))
      fs::copy_file(f.path(), root_->File("tiny-llada/" + f.path().filename().string()));
    loader::LoaderOptions lo;
    lo.model_roots = {root_->path()};
    loader_core_ = new loader::LoaderCore(lo);
    loader_service_ = new loader::LoaderGrpcService(*loader_core_);
    loader_runner_ = new services::ServerRunner("Loader");
    loader_runner_->AddService(loader_service_);
    ASSERT_TRUE(loader_runner_->Start("127.0.0.1:0").ok());
    loader_runner_->SetServing(true);

    auto lease = LoaderLease::Acquire(
        AttachOptions{"127.0.0.1:" + std::to_string(loader_runner_->port()), "tiny-llada", "bf16", "executor-test",
                      std::chrono::seconds(10)});
    ASSERT_TRUE(lease.ok()) << lease.status().ToString();
    lease_ = lease->release();
    auto model = model::LladaModel::FromSegment(lease_->model(), model::ModelOptions{});  // fp32, as the golden file
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    ExecutorOptions eo;
    eo.executor_id = "executor-test";
    eo.model_id = "tiny-llada";
    eo.max_batch = 4;
    eo.weights_precision = lease_->precision();
    core_ = new ExecutorCore(std::shared_ptr<const model::LladaModel>(std::move(*model)), eo);
    ASSERT_TRUE(core_->Warmup().ok());
    service_ = new ExecutorGrpcService(*core_, "tiny-llada");
    runner_ = new services::ServerRunner("Executor");
    runner_->AddService(service_);
    ASSERT_TRUE(runner_->Start("127.0.0.1:0").ok());
    runner_->SetServing(true);
    stub_ = v1::Executor::NewStub(
                grpc::CreateChannel("127.0.0.1:" + std::to_string(runner_->port()), grpc::InsecureChannelCredentials()))
                .release();
  }
  static void TearDownTestSuite() {
    // A registered service must outlive its server (grpc::ServerBuilder::RegisterService):
    // each runner goes before the service it serves.
    runner_->Drain(std::chrono::seconds(1));
    delete stub_;
    delete runner_;
    delete service_;
    delete core_;
    delete lease_;
    loader_runner_->Drain(std::chrono::seconds(1));
    (void)loader_core_->Unload("tiny-llada", true);
    delete loader_runner_;
    delete loader_service_;
    delete loader_core_;
    delete root_;
  }

  static v1::RunRequest Request(const std::vector<std::int64_t>& prompt, int gen, int block, int steps) {
    v1::RunRequest req;
    req.set_job_id("job");
    req.set_model_id("tiny-llada");
    for (auto id : prompt) req.add_prompt_ids(id);
    req.mutable_params()->set_gen_length(gen);
    req.mutable_params()->set_block_length(block);
    req.mutable_params()->set_steps(steps);
    return req;
  }

  static RunOutcome Run(const v1::RunRequest& req, grpc::ClientContext* ctx = nullptr) {
    grpc::ClientContext local;
    if (ctx == nullptr) ctx = &local;
    RunOutcome out;
    auto reader = stub_->Run(ctx, req);
    v1::RunEvent ev;
    while (reader->Read(&ev)) {
      if (ev.has_step()) out.steps.push_back(ev.step());
      if (ev.has_completed()) out.completed = ev.completed();
    }
    out.status = reader->Finish();
    return out;
  }

  static void ExpectBatchedEqualsAlone(ExecutorCore& core, const std::vector<v1::RunRequest>& requests);
  // gen 16, block 8, 16 steps with `sampler`, one request per prompt.
  static std::vector<v1::RunRequest> SameShape(const std::vector<std::vector<std::int64_t>>& prompts,
                                               const std::string& sampler);

  static unmask::testing::TempDir* root_;
  static loader::LoaderCore* loader_core_;
  static loader::LoaderGrpcService* loader_service_;
  static services::ServerRunner* loader_runner_;
  static LoaderLease* lease_;
  static ExecutorCore* core_;
  static ExecutorGrpcService* service_;
  static services::ServerRunner* runner_;
  static v1::Executor::Stub* stub_;
};
unmask::testing::TempDir* ExecutorServiceTest::root_ = nullptr;
loader::LoaderCore* ExecutorServiceTest::loader_core_ = nullptr;
loader::LoaderGrpcService* ExecutorServiceTest::loader_service_ = nullptr;
services::ServerRunner* ExecutorServiceTest::loader_runner_ = nullptr;
LoaderLease* ExecutorServiceTest::lease_ = nullptr;
ExecutorCore* ExecutorServiceTest::core_ = nullptr;
ExecutorGrpcService* ExecutorServiceTest::service_ = nullptr;
services::ServerRunner* ExecutorServiceTest::runner_ = nullptr;
v1::Executor::Stub* ExecutorServiceTest::stub_ = nullptr;

TEST_F(ExecutorServiceTest, RunStreamsTheGoldenStepsAndOutput) {
  std::ifstream in(unmask::testing::TestDataPath("tiny-llada.golden.json"));
  const json golden = json::parse(in);
  for (int index : {0, 1, 2, 6, 7, 8}) {  // blocks, several tokens per step, cfg, temperature, random
    const json& c = golden["cases"][index];
    v1::RunRequest req = Request(c["prompt"][0].get<std::vector<std::int64_t>>(), c["gen_length"], c["block_length"], c["steps"]);
    auto* p = req.mutable_params();
    p->set_temperature(c["temperature"]);
    p->set_cfg_scale(c["cfg_scale"]);
    p->set_remasking(c["remasking"] == "random" ? v1::REMASKING_RANDOM : v1::REMASKING_LOW_CONFIDENCE);
    p->set_seed(c["seed"]);
    RunOutcome r = Run(req);
    ASSERT_TRUE(r.status.ok()) << r.status.error_message();
    const auto expected = c["output"][0].get<std::vector<std::int64_t>>();
    EXPECT_EQ(std::vector<std::int64_t>(r.completed.ids().begin(), r.completed.ids().end()), expected) << "case " << index;
    ASSERT_EQ(r.steps.size(), c["unmasked_per_step"].size()) << "case " << index;
    for (std::size_t s = 0; s < r.steps.size(); ++s) {
      const auto positions = c["unmasked_per_step"][s][0].get<std::vector<std::int64_t>>();
      EXPECT_EQ(std::vector<std::int64_t>(r.steps[s].unmasked().positions().begin(), r.steps[s].unmasked().positions().end()),
                positions) << "case " << index << " step " << s;
      EXPECT_EQ(r.steps[s].step(), static_cast<std::int64_t>(s));
      for (int k = 0; k < r.steps[s].unmasked().tokens_size(); ++k)
        EXPECT_EQ(r.steps[s].unmasked().tokens(k), expected[r.steps[s].unmasked().positions(k)]);
    }
    EXPECT_EQ(r.completed.sampler(), "reference");
    EXPECT_EQ(r.completed.step_seconds_size(), c["steps"].get<int>());
  }
}

TEST_F(ExecutorServiceTest, TheLeaseSaysHowWeightsReachTheDevice) {
  EXPECT_EQ(lease_->device_sharing(), "shm");  // a CPU executor maps the segment
  // An executor on a GPU attached to a loader without a GPU copy: it must copy, and says why.
  AttachOptions on_gpu{"127.0.0.1:" + std::to_string(loader_runner_->port()), "tiny-llada", "bf16",
                       "executor-gpu-test", std::chrono::seconds(10)};
  on_gpu.device = "cuda:0";
  auto gpu = LoaderLease::Acquire(on_gpu);
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  EXPECT_THAT((*gpu)->device_sharing(), ::testing::StartsWith("copy: "));
  EXPECT_THAT((*gpu)->device_sharing(), ::testing::HasSubstr("--device cuda:N"));
  EXPECT_EQ((*gpu)->model()->device_region(0), nullptr);
}

TEST_F(ExecutorServiceTest, CancellingTheCallStopsTheJob) {
  grpc::ClientContext ctx;
  auto reader = stub_->Run(&ctx, Request({1, 2, 3}, 64, 64, 64));
  v1::RunEvent ev;
  ASSERT_TRUE(reader->Read(&ev));
  ASSERT_TRUE(reader->Read(&ev));
  ctx.TryCancel();
  while (reader->Read(&ev)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // The job stops at its next step; the executor is free again.
  for (int i = 0; i < 100 && core_->Capacity().running_jobs > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(core_->Capacity().running_jobs, 0);
  EXPECT_TRUE(Run(Request({1, 2}, 8, 8, 8)).status.ok());
}

TEST_F(ExecutorServiceTest, APassedDeadlineStopsTheJob) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  RunOutcome r = Run(Request({1, 2, 3}, 256, 256, 256), &ctx);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(r.steps.size(), 256u);
}

std::vector<std::int64_t> Ids(const v1::RunCompleted& c) { return {c.ids().begin(), c.ids().end()}; }

// Runs `requests` concurrently behind a long job (so that they join its running batch at
// different steps), then each alone, and checks that every batched job equals the same job run
// alone, step for step.
void ExecutorServiceTest::ExpectBatchedEqualsAlone(ExecutorCore& core, const std::vector<v1::RunRequest>& requests) {
  auto blocker = core.Submit(*JobRequestFromProto(Request({7, 7, 7}, 32, 32, 32), core.model()->config()));
  ASSERT_TRUE(blocker.ok());
  std::vector<std::future<RunOutcome>> batched;
  for (const auto& r : requests) batched.push_back(std::async(std::launch::async, [r] { return Run(r); }));
  std::vector<RunOutcome> together;
  for (auto& f : batched) together.push_back(f.get());
  int max_batch = 0;
  for (const auto& r : together) {
    ASSERT_TRUE(r.status.ok()) << r.status.error_message();
    max_batch = std::max(max_batch, r.completed.batch_size());
  }
  EXPECT_GT(max_batch, 1) << "the concurrent jobs were not batched";
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const std::string what = requests[i].params().sampler() + ", request " + std::to_string(i);
    RunOutcome alone = Run(requests[i]);
    ASSERT_TRUE(alone.status.ok());
    EXPECT_EQ(alone.completed.batch_size(), 1);
    EXPECT_EQ(Ids(together[i].completed), Ids(alone.completed)) << what;
    ASSERT_EQ(together[i].steps.size(), alone.steps.size()) << what;
    for (std::size_t s = 0; s < alone.steps.size(); ++s) {
      EXPECT_EQ(std::vector<std::int64_t>(together[i].steps[s].unmasked().positions().begin(),
                                          together[i].steps[s].unmasked().positions().end()),
                std::vector<std::int64_t>(alone.steps[s].unmasked().positions().begin(),
                                          alone.steps[s].unmasked().positions().end()))
          << what << ", step " << s;
    }
  }
  JobEvent ev;
  while ((*blocker)->Next(ev, std::chrono::seconds(30)) && ev.kind == JobEvent::Kind::kStep) {
  }
}

std::vector<v1::RunRequest> ExecutorServiceTest::SameShape(const std::vector<std::vector<std::int64_t>>& prompts,
                                                           const std::string& sampler) {
  std::vector<v1::RunRequest> requests;
  for (const auto& p : prompts) {
    requests.push_back(Request(p, 16, 8, 16));
    requests.back().mutable_params()->set_sampler(sampler);
  }
  return requests;
}

TEST_F(ExecutorServiceTest, BatchedJobsEqualTheSameJobsRunAlone) {
  ExpectBatchedEqualsAlone(*core_, SameShape({{10, 11, 12, 13}, {20, 21, 22, 23}, {30, 31, 32, 33}, {40, 41, 42, 43}},
                                             "reference"));
}

TEST_F(ExecutorServiceTest, JobsWithDifferentPromptLengthsShareForwardsAndEqualTheirRunsAlone) {
  const std::vector<std::vector<std::int64_t>> prompts = {{10, 11, 12, 13}, {20}, {30, 31, 32, 33, 34, 35, 36}, {40, 41}};
  ExpectBatchedEqualsAlone(*core_, SameShape(prompts, "reference"));
  ExpectBatchedEqualsAlone(*core_, SameShape(prompts, "dual_cache+threshold"));
}

// Continuous batching across requests that agree on nothing: lengths, blocks, steps, modes,
// temperature and seed, guidance, attention chunks.
TEST_F(ExecutorServiceTest, JobsThatDifferInEveryParameterShareForwardsAndEqualTheirRunsAlone) {
  std::vector<v1::RunRequest> requests;
  requests.push_back(Request({10, 11, 12}, 16, 8, 16));
  requests.push_back(Request({20, 21, 22, 23, 24, 25}, 32, 16, 16));
  requests.back().mutable_params()->set_sampler("dual_cache+threshold");
  requests.push_back(Request({30}, 24, 8, 12));
  requests.back().mutable_params()->set_sampler("prefix_cache");
  requests.back().mutable_params()->set_temperature(0.8);
  requests.back().mutable_params()->set_seed(42);
  requests.push_back(Request({40, 41}, 16, 16, 8));
  requests.back().mutable_params()->set_sampler("reference");
  requests.back().mutable_params()->set_temperature(0.5);
  requests.back().mutable_params()->set_seed(7);
  requests.back().mutable_params()->set_cfg_scale(1.5);
  requests.push_back(Request({50, 51, 52, 53}, 16, 4, 16));
  requests.back().mutable_params()->set_sampler("factor");
  requests.back().mutable_params()->set_attention_query_chunk(4);
  ExpectBatchedEqualsAlone(*core_, requests);
}

// A worker takes its share of the jobs running and queued: never more than one in `workers` of them.
TEST(WorkerShareTest, SpreadsJobsOverTheWorkers) {
  EXPECT_EQ(WorkerShare(8, 2, 8), 4u);
  EXPECT_EQ(WorkerShare(3, 2, 8), 2u);
  EXPECT_EQ(WorkerShare(1, 2, 8), 1u);
  EXPECT_EQ(WorkerShare(0, 2, 8), 1u);   // an empty executor still takes the next job
  EXPECT_EQ(WorkerShare(40, 2, 8), 8u);  // at most max_batch
  EXPECT_EQ(WorkerShare(5, 1, 8), 5u);   // one worker: everything up to max_batch
  EXPECT_EQ(WorkerShare(5, 0, 8), 5u);
}

// Two workers over the same model: four jobs sent at once spread over both (each packs at most
// its share, 2, into a forward), and every job equals its run alone.
TEST_F(ExecutorServiceTest, TwoWorkersSpreadJobsAndEachEqualsItsRunAlone) {
  ExecutorOptions eo;
  eo.executor_id = "executor-two-workers";
  eo.model_id = "tiny-llada";
  eo.workers = 2;
  eo.max_batch = 8;
  ExecutorCore two(core_->model(), eo);
  const auto requests = SameShape({{10, 11, 12, 13}, {20}, {30, 31, 32, 33, 34, 35, 36}, {40, 41}}, "dual_cache+threshold");
  std::vector<std::shared_ptr<Job>> jobs;
  for (const auto& r : requests) {
    auto job = two.Submit(*JobRequestFromProto(r, core_->model()->config()));
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    jobs.push_back(*job);
  }
  EXPECT_EQ(two.Capacity().max_concurrent_jobs, 16);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    JobEvent ev;
    while (jobs[i]->Next(ev, std::chrono::seconds(60)) && ev.kind == JobEvent::Kind::kStep) {
    }
    ASSERT_EQ(ev.kind, JobEvent::Kind::kCompleted) << ev.status.ToString();
    EXPECT_LE(ev.completed.batch_size, 2) << "job " << i << " shared a forward with more than its worker's share";
    RunOutcome alone = Run(requests[i]);
    ASSERT_TRUE(alone.status.ok());
    EXPECT_EQ(ev.completed.ids, Ids(alone.completed)) << "job " << i;
  }
}

TEST_F(ExecutorServiceTest, EarlyStopIsOnUnlessTheRequestTurnsItOff) {
  v1::RunRequest req = Request({1, 2}, 16, 8, 16);
  req.mutable_params()->set_sampler("dual_cache");
  JobRequest unset = *JobRequestFromProto(req, core_->model()->config());
  EXPECT_TRUE(unset.params.early_stop) << "an unset early_stop keeps today's default";
  req.mutable_params()->set_early_stop(false);
  JobRequest off = *JobRequestFromProto(req, core_->model()->config());
  EXPECT_FALSE(off.params.early_stop);
  req.mutable_params()->set_early_stop(true);
  JobRequest on = *JobRequestFromProto(req, core_->model()->config());
  EXPECT_TRUE(on.params.early_stop);
}

// A job cancelled while it shares forwards with others fails alone; the others finish as alone.
TEST_F(ExecutorServiceTest, AJobCancelledMidBatchLeavesTheOthersRunningAndExact) {
  const auto& config = core_->model()->config();
  auto victim = core_->Submit(*JobRequestFromProto(Request({5, 6, 7}, 32, 8, 32), config));
  std::vector<std::shared_ptr<Job>> others;
  for (std::int64_t t : {20, 30}) others.push_back(*core_->Submit(*JobRequestFromProto(Request({t, t + 1}, 16, 8, 16), config)));
  ASSERT_TRUE(victim.ok());
  JobEvent ev;
  for (int steps = 0; steps < 3;) {  // cancel mid-block, while the others are in the batch
    ASSERT_TRUE((*victim)->Next(ev, std::chrono::seconds(30)));
    if (ev.kind == JobEvent::Kind::kStep) ++steps;
  }
  (*victim)->Cancel();
  while ((*victim)->Next(ev, std::chrono::seconds(30)) && ev.kind == JobEvent::Kind::kStep) {
  }
  EXPECT_EQ(ev.kind, JobEvent::Kind::kFailed);
  EXPECT_EQ(ev.status.code(), StatusCode::kCancelled);
  for (std::size_t i = 0; i < others.size(); ++i) {
    JobEvent out;
    while (others[i]->Next(out, std::chrono::seconds(30)) && out.kind == JobEvent::Kind::kStep) {
    }
    ASSERT_EQ(out.kind, JobEvent::Kind::kCompleted) << out.status.ToString();
    EXPECT_GT(out.completed.batch_size, 1);
    const std::int64_t t = i == 0 ? 20 : 30;
    RunOutcome alone = Run(Request({t, t + 1}, 16, 8, 16));
    EXPECT_EQ(out.completed.ids, Ids(alone.completed));
  }
}

// A job scoring its prompt (prompt_logprobs) runs one scoring forward per round: a job beside it
// steps to its end meanwhile, and the scores equal the engine's own (sampler::PromptLogprobs).
TEST_F(ExecutorServiceTest, AJobScoringItsPromptLetsTheOthersStepAndScoresAsTheEngineDoes) {
  const auto& config = core_->model()->config();
  std::vector<std::int64_t> prompt;
  for (std::int64_t i = 0; i < 240; ++i) prompt.push_back(10 + (i * 37) % 5000);
  v1::RunRequest scoring = Request(prompt, 4, 4, 4);  // 239 forwards of one 240-token row
  scoring.mutable_params()->set_prompt_logprobs(2);
  auto a = core_->Submit(*JobRequestFromProto(scoring, config));
  auto b = core_->Submit(*JobRequestFromProto(Request({7, 8, 9}, 4, 4, 4), config));
  ASSERT_TRUE(a.ok() && b.ok());
  JobEvent ev;
  while ((*b)->Next(ev, std::chrono::seconds(30)) && ev.kind == JobEvent::Kind::kStep) {
  }
  ASSERT_EQ(ev.kind, JobEvent::Kind::kCompleted) << ev.status.ToString();
  EXPECT_FALSE((*a)->Next(ev, std::chrono::milliseconds(0))) << "the scoring job stepped before the other ended";
  std::vector<JobEvent> events;
  while ((*a)->Next(ev, std::chrono::seconds(60))) {
    events.push_back(ev);
    if (ev.kind != JobEvent::Kind::kStep) break;
  }
  ASSERT_EQ(events.back().kind, JobEvent::Kind::kCompleted) << events.back().status.ToString();
  const auto engine = sampler::PromptLogprobs(*core_->model(), prompt, sampler::PromptScoring{2, 0, 4096, 0});
  const auto& got = events.back().completed.prompt_logprobs;
  ASSERT_EQ(got.size(), prompt.size() - 1);
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, static_cast<std::int64_t>(i + 1));
    EXPECT_EQ(got[i].second.token, prompt[i + 1]);
    EXPECT_NEAR(got[i].second.logprob, engine[i + 1]->logprob, 1e-4) << i;
    ASSERT_EQ(got[i].second.top.size(), 2u);
  }
  EXPECT_EQ(events.front().step.prompt_logprobs.size(), got.size()) << "the first step carries them";
  for (std::size_t s = 1; s + 1 < events.size(); ++s) EXPECT_TRUE(events[s].step.prompt_logprobs.empty()) << s;
}

// A likelihood job runs its draws one forward per round beside a generating job, generates
// nothing, and its estimate is the engine's own for the same seed (sampler::EstimateLikelihood,
// golden against the official code in sampler_tests); bad settings are refused by name.
TEST_F(ExecutorServiceTest, ALikelihoodJobEstimatesAsTheEngineDoesAndGeneratesNothing) {
  const std::vector<std::int64_t> prompt = {17, 230, 45, 301, 8, 99, 150, 420, 3, 77};
  v1::RunRequest req = Request(prompt, 1, 1, 1);
  req.mutable_params()->set_seed(5);
  req.mutable_params()->set_cfg_scale(0.5);
  auto* l = req.mutable_params()->mutable_likelihood();
  l->set_continuation_tokens(4);
  l->set_mc_num(6);
  l->set_batch_size(3);
  l->set_check_greedy(true);
  auto beside = std::async(std::launch::async, [&] { return Run(Request({7, 8, 9}, 16, 8, 16)); });
  const RunOutcome out = Run(req);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  ASSERT_TRUE(beside.get().status.ok());
  EXPECT_TRUE(out.steps.empty()) << "a likelihood job has no steps";
  EXPECT_EQ(out.completed.ids_size(), 0);
  ASSERT_TRUE(out.completed.has_likelihood());
  auto params = generation::ParamsFromProto(req.params());
  ASSERT_TRUE(params.ok());
  const auto engine = sampler::EstimateLikelihood(*core_->model(), prompt, *params, 1 << 20);
  EXPECT_NEAR(out.completed.likelihood().loglikelihood(), engine.loglikelihood, 1e-4);
  EXPECT_NEAR(out.completed.likelihood().standard_error(), engine.standard_error, 1e-4);
  EXPECT_EQ(out.completed.likelihood().samples(), 6);
  ASSERT_TRUE(out.completed.likelihood().has_greedy());
  EXPECT_EQ(out.completed.likelihood().greedy(), *engine.greedy);
  EXPECT_LT(out.completed.likelihood().loglikelihood(), 0);

  v1::RunRequest bad = req;
  bad.mutable_params()->mutable_likelihood()->set_continuation_tokens(11);
  RunOutcome r = Run(bad);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(services::FromGrpcStatus(r.status).field(), "likelihood.continuation_tokens");  // as gen_length's
  bad = req;
  bad.mutable_params()->mutable_likelihood()->set_batch_size(4);
  r = Run(bad);
  EXPECT_EQ(services::FromGrpcStatus(r.status).field(), "params.likelihood.batch_size");
}

// A score_only job scores its prompt and completes: no step, no ids, the prompt's
// log-probabilities in the result, as the engine scores them.
TEST_F(ExecutorServiceTest, AScoreOnlyJobScoresItsPromptAndGeneratesNothing) {
  const std::vector<std::int64_t> prompt = {17, 230, 45, 301, 8, 99};
  for (const std::vector<std::int64_t>& p : {prompt, std::vector<std::int64_t>{17}}) {  // a one-token prompt too
    v1::RunRequest req = Request(p, 1, 1, 1);
    req.mutable_params()->set_prompt_logprobs(1);
    req.mutable_params()->set_score_only(true);
    const RunOutcome out = Run(req);
    ASSERT_TRUE(out.status.ok()) << out.status.error_message();
    EXPECT_TRUE(out.steps.empty());
    EXPECT_EQ(out.completed.ids_size(), 0);
    EXPECT_EQ(out.completed.steps_run(), 0);
    ASSERT_EQ(out.completed.prompt_logprobs_size(), static_cast<int>(p.size()) - 1);
    const auto engine = sampler::PromptLogprobs(*core_->model(), p, sampler::PromptScoring{1, 0, 4096, 0});
    for (int i = 0; i < out.completed.prompt_logprobs_size(); ++i)
      EXPECT_NEAR(out.completed.prompt_logprobs(i).logprob(), engine[i + 1]->logprob, 1e-4) << i;
  }
  v1::RunRequest bad = Request(prompt, 1, 1, 1);
  bad.mutable_params()->set_score_only(true);
  EXPECT_EQ(services::FromGrpcStatus(Run(bad).status).field(), "params.score_only");
}

TEST_F(ExecutorServiceTest, BadRequestsNameTheField) {
  v1::RunRequest req = Request({1, 2}, 16, 8, 16);
  req.set_model_id("other-model");
  RunOutcome r = Run(req);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(r.status.error_message(), HasSubstr("model_id"));
  EXPECT_EQ(services::FromGrpcStatus(r.status).field(), "model_id");  // google.rpc.BadRequest on the wire

  r = Run(Request({1, 2}, 12, 8, 16));
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r.status.error_message(), HasSubstr("params.block_length: must divide gen_length (12), got 8"));
  EXPECT_EQ(services::FromGrpcStatus(r.status).field(), "params.block_length");

  r = Run(Request({}, 8, 8, 8));
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r.status.error_message(), HasSubstr("prompt_ids"));

  r = Run(Request({1, 999999}, 8, 8, 8));
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r.status.error_message(), HasSubstr("token id 999999"));

  req = Request({1, 2}, 8, 8, 8);
  req.mutable_params()->set_sampler("warp_speed");
  r = Run(req);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r.status.error_message(), HasSubstr("params.sampler"));

  req = Request({1, 2}, 8, 8, 8);
  req.mutable_params()->set_temperature(-1);
  EXPECT_THAT(Run(req).status.error_message(), HasSubstr("temperature"));
  req = Request({1, 2}, 8, 8, 8);
  req.mutable_params()->set_remasking(static_cast<v1::Remasking>(42));
  EXPECT_THAT(Run(req).status.error_message(), HasSubstr("params.remasking"));
  req = Request({1, 2}, 8, 8, 8);
  req.mutable_params()->set_sampler("threshold");
  req.mutable_params()->set_threshold(-0.5);
  EXPECT_EQ(Run(req).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  req = Request({1, 2}, 8, 8, 8);
  req.mutable_params()->set_attention_query_chunk(-2);
  r = Run(req);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r.status.error_message(), HasSubstr("params.attention_query_chunk"));
}

TEST_F(ExecutorServiceTest, FastModeRunsThroughTheService) {
  v1::RunRequest req = Request({1, 2, 3, 4}, 16, 8, 16);
  req.mutable_params()->set_sampler("dual_cache+threshold");
  RunOutcome r = Run(req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.completed.sampler(), "dual_cache+threshold");
  EXPECT_EQ(r.completed.ids_size() > 0, true);
}

TEST_F(ExecutorServiceTest, CapacityReportsBudgetAndModel) {
  grpc::ClientContext ctx;
  v1::Capacity cap;
  ASSERT_TRUE(stub_->GetCapacity(&ctx, v1::GetCapacityRequest(), &cap).ok());
  EXPECT_EQ(cap.executor_id(), "executor-test");
  EXPECT_GT(cap.budget_bytes(), 0u);
  EXPECT_GT(cap.in_use_bytes(), 0u);
  EXPECT_EQ(cap.max_concurrent_jobs(), 4);
  ASSERT_EQ(cap.models_size(), 1);
  EXPECT_EQ(cap.models(0), "tiny-llada");
  EXPECT_EQ(cap.precision(), "bf16");
  EXPECT_THAT(cap.model_config_json(), HasSubstr("\"d_model\": 64"));
}

TEST_F(ExecutorServiceTest, AJobThatCanNeverFitIsRefusedNamingItsNeedAndTheBudget) {
  ExecutorOptions options;
  options.executor_id = "small";
  options.job_budget_bytes = 4096;
  ExecutorCore small(core_->model(), options);
  auto job = small.Submit(*JobRequestFromProto(Request({1, 2, 3}, 16, 8, 16), core_->model()->config()));
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(job.status().reason(), "DOES_NOT_FIT");
  EXPECT_THAT(job.status().message(), HasSubstr("job budget of 4.00 KiB"));
  EXPECT_EQ(small.Capacity().job_budget_bytes, 4096u);
}

// A job that expired in the queue and fails as it would join a running batch leaves the
// executor's counts right: nothing running or charged once the batch is done.
TEST_F(ExecutorServiceTest, AJobFailingAsItJoinsARunningBatchLeavesTheCountsRight) {
  ExecutorOptions options;
  options.executor_id = "counts";
  ExecutorCore core(core_->model(), options);
  const auto& config = core_->model()->config();
  auto running = core.Submit(*JobRequestFromProto(Request({1, 2, 3}, 32, 8, 32), config));
  ASSERT_TRUE(running.ok());
  JobEvent ev;
  ASSERT_TRUE((*running)->Next(ev, std::chrono::seconds(30)));  // the batch is running
  JobRequest expired = *JobRequestFromProto(Request({4, 5}, 16, 8, 16), config);
  expired.deadline = Clock::now();
  auto late = core.Submit(expired);
  ASSERT_TRUE(late.ok());
  while ((*late)->Next(ev, std::chrono::seconds(30)) && ev.kind == JobEvent::Kind::kStep) {
  }
  EXPECT_EQ(ev.status.code(), StatusCode::kDeadlineExceeded);
  while ((*running)->Next(ev, std::chrono::seconds(30)) && ev.kind == JobEvent::Kind::kStep) {
  }
  ASSERT_EQ(ev.kind, JobEvent::Kind::kCompleted);
  for (int i = 0; i < 100 && core.Capacity().running_jobs != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(core.Capacity().running_jobs, 0);
  EXPECT_EQ(core.Capacity().job_bytes_in_use, 0u);
}

// With a budget for two such jobs, four submitted at once run at most two at a time, and all finish.
TEST_F(ExecutorServiceTest, TheRunningBatchStaysWithinTheJobBudget) {
  const JobRequest request = *JobRequestFromProto(Request({1, 2, 3}, 16, 8, 16), core_->model()->config());
  const std::uint64_t charge = core_->Charge(request);
  ASSERT_GT(charge, 0u);
  ExecutorOptions options;
  options.executor_id = "two-at-a-time";
  options.max_batch = 8;
  options.job_budget_bytes = 2 * charge + charge / 2;
  ExecutorCore core(core_->model(), options);
  std::vector<std::shared_ptr<Job>> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(*core.Submit(request));
  int largest = 0;
  for (auto& job : jobs) {
    JobEvent ev;
    while (job->Next(ev, std::chrono::seconds(30)) && ev.kind == JobEvent::Kind::kStep) {
      EXPECT_LE(core.Capacity().job_bytes_in_use, options.job_budget_bytes);
    }
    ASSERT_EQ(ev.kind, JobEvent::Kind::kCompleted) << ev.status.ToString();
    largest = std::max(largest, ev.completed.batch_size);
  }
  EXPECT_EQ(largest, 2);
  // A job's charge is released when the worker takes it out of the batch, just after its last
  // event: the count reaches 0 then, not necessarily before the test reads it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (core.Capacity().job_bytes_in_use != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(core.Capacity().job_bytes_in_use, 0u);
}

}  // namespace
}  // namespace unmask::executor
