// The executor's lease keeper against a real loader on port 0 with the golden checkpoint: a
// forced unload stops the executor serving the model, running jobs finish, the loader frees the
// weights only once the executor let go of them, nobody reloads the model behind the operator's
// back, and the executor serves again (at the new precision) once the model is loaded again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "services/common/server_runner.h"
#include "services/executor/executor_core.h"
#include "services/executor/lease_keeper.h"
#include "services/executor/loader_client.h"
#include "services/loader/loader_core.h"
#include "services/loader/loader_grpc.h"
#include "tests/fixtures/temp_checkpoint.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::executor {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
constexpr char kModel[] = "tiny-llada";

template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds within = std::chrono::seconds(10)) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

StatusOr<std::shared_ptr<const model::LladaModel>> ModelOver(std::shared_ptr<const weights::AttachedModel> segment) {
  UNMASK_ASSIGN_OR_RETURN(auto m, model::LladaModel::FromSegment(std::move(segment), model::ModelOptions{}));
  return std::shared_ptr<const model::LladaModel>(std::move(m));
}

JobRequest SmallJob(int steps) {
  JobRequest r;
  r.job_id = "job";
  r.prompt_ids = {1, 2, 3};
  r.params.gen_length = r.params.block_length = r.params.steps = steps;
  return r;
}

// The last event of a job: completed or failed.
JobEvent Finish(Job& job) {
  JobEvent ev;
  while (job.Next(ev, std::chrono::seconds(30)) && ev.kind == JobEvent::Kind::kStep) {
  }
  return ev;
}

class LeaseKeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_.File(kModel));
    for (const auto& f : fs::directory_iterator(unmask::testing::TestDataPath(kModel)))
      fs::copy_file(f.path(), root_.File(std::string(kModel) + "/" + f.path().filename().string()));
    loader::LoaderOptions lo;
    lo.model_roots = {root_.path()};
    loader_ = std::make_unique<loader::LoaderCore>(lo);
    service_ = std::make_unique<loader::LoaderGrpcService>(*loader_);
    runner_.AddService(service_.get());
    ASSERT_TRUE(runner_.Start("127.0.0.1:0").ok());
    runner_.SetServing(true);
    attach_ = AttachOptions{"127.0.0.1:" + std::to_string(runner_.port()), kModel, "bf16", "executor-k",
                            std::chrono::seconds(10)};
  }
  void TearDown() override {
    keeper_.reset();
    core_.reset();
    runner_.Drain(std::chrono::seconds(1));
    for (const auto& m : loader_->List()) (void)loader_->Unload(m.model_id, /*force=*/true);
  }

  // An executor (core + keeper) attached to the model, as unmask-executor runs it.
  void StartExecutor() {
    auto lease = LoaderLease::Acquire(attach_);
    ASSERT_TRUE(lease.ok()) << lease.status().ToString();
    auto model = ModelOver((*lease)->model());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    ExecutorOptions eo;
    eo.executor_id = "executor-k";
    eo.model_id = kModel;
    eo.weights_precision = (*lease)->precision();
    core_ = std::make_unique<ExecutorCore>(*std::move(model), eo);
    LeaseKeeperHooks hooks;
    hooks.build = ModelOver;
    hooks.set_serving = [this](bool s) { serving_ = s; };
    keeper_ = std::make_unique<LeaseKeeper>(attach_, *std::move(lease), *core_, hooks, telemetry::Tracer::Disabled(),
                                            std::chrono::milliseconds(20));
  }

  Status LoadAs(const std::string& precision) {
    return loader_->Load(kModel, precision, [](const weights::LoadProgress&) { return true; }).status();
  }

  unmask::testing::TempDir root_;
  std::unique_ptr<loader::LoaderCore> loader_;
  std::unique_ptr<loader::LoaderGrpcService> service_;
  services::ServerRunner runner_{"Loader"};
  AttachOptions attach_;
  std::unique_ptr<ExecutorCore> core_;
  std::unique_ptr<LeaseKeeper> keeper_;
  std::atomic<bool> serving_{true};
};

TEST_F(LeaseKeeperTest, AForcedUnloadIsLetGoOfAfterRunningJobsAndServedAgainOnceReloaded) {
  ASSERT_NO_FATAL_FAILURE(StartExecutor());
  ASSERT_EQ(loader_->List().size(), 1u);

  // A job that is running when the unload comes finishes on the old weights.
  auto running = core_->Submit(SmallJob(32));
  ASSERT_TRUE(running.ok());
  JobEvent first;
  ASSERT_TRUE((*running)->Next(first, std::chrono::seconds(30)));
  ASSERT_EQ(first.kind, JobEvent::Kind::kStep);
  // Something still using the old weights, like a batch that has not finished yet.
  std::shared_ptr<const model::LladaModel> in_use = core_->model();

  auto notified = loader_->Unload(kModel, /*force=*/true);
  ASSERT_TRUE(notified.ok()) << notified.status().ToString();
  EXPECT_EQ(*notified, std::vector<std::string>{"executor-k"});

  ASSERT_TRUE(Eventually([&] { return !serving_.load(); })) << "the executor must stop serving the model";
  auto refused = core_->Submit(SmallJob(4));
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(), HasSubstr("'tiny-llada' was unloaded"));
  EXPECT_TRUE(core_->Capacity().models.empty()) << "the scheduler must not route the model here";
  EXPECT_EQ(Finish(**running).kind, JobEvent::Kind::kCompleted) << "the running job finishes";

  // The loader keeps the weights while the executor still uses them...
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(loader_->List().size(), 1u);
  EXPECT_EQ(loader_->List()[0].state, weights::ModelState::kUnloading);
  EXPECT_EQ(loader_->List()[0].executors, std::vector<std::string>{"executor-k"});
  // ...and frees them once it let go.
  in_use.reset();
  ASSERT_TRUE(Eventually([&] { return loader_->List().empty(); })) << "the loader must free the unloaded model";
  EXPECT_EQ(loader_->resident_bytes(), 0u);

  // The executor does not load the model again itself: the unload was the operator's decision.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(loader_->List().empty());
  EXPECT_FALSE(serving_.load());

  // Loaded again (at another precision): the executor attaches and serves it.
  ASSERT_TRUE(LoadAs("int8").ok());
  ASSERT_TRUE(Eventually([&] { return serving_.load(); })) << "the executor must serve the reloaded model";
  EXPECT_EQ(loader_->List()[0].executors, std::vector<std::string>{"executor-k"});
  const CapacityReport c = core_->Capacity();
  EXPECT_EQ(c.models, std::vector<std::string>{kModel});
  EXPECT_EQ(c.precision, "int8");
  auto again = core_->Submit(SmallJob(4));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(Finish(**again).kind, JobEvent::Kind::kCompleted);
}

TEST_F(LeaseKeeperTest, WithoutAModelJobsAreRefusedAsUnavailableAndTheCapacityListsNone) {
  ASSERT_NO_FATAL_FAILURE(StartExecutor());
  // No model, as between a forced unload and the next load.
  std::shared_ptr<const model::LladaModel> old = core_->ReplaceModel(nullptr, "");
  auto job = core_->Submit(SmallJob(4));
  EXPECT_EQ(job.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(job.status().message(), HasSubstr("executor-k"));
  EXPECT_TRUE(core_->Capacity().models.empty());
  EXPECT_TRUE(core_->Capacity().model_config_json.empty());
  core_->ReplaceModel(old, "bf16");
  EXPECT_EQ(core_->Capacity().precision, "bf16");
  job = core_->Submit(SmallJob(4));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(Finish(**job).kind, JobEvent::Kind::kCompleted);
}

TEST_F(LeaseKeeperTest, AnExecutorStoppedWhileHoldingARevokedModelStillLetsGo) {
  ASSERT_NO_FATAL_FAILURE(StartExecutor());
  std::shared_ptr<const model::LladaModel> in_use = core_->model();
  ASSERT_TRUE(loader_->Unload(kModel, /*force=*/true).ok());
  ASSERT_TRUE(Eventually([&] { return !serving_.load(); }));
  keeper_.reset();  // shutting down while a job still holds the weights: the lease closes anyway
  core_.reset();
  in_use.reset();
  ASSERT_TRUE(Eventually([&] { return loader_->List().empty(); }));
}

}  // namespace
}  // namespace unmask::executor
