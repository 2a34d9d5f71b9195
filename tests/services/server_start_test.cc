// Each service started in-process from its Options (services/*/<name>_server.h), as the mains
// start them: port 0, a real gRPC call (health and a real RPC), then a clean Shutdown. The
// scheduler's test runs the whole stack in one process: loader -> executor -> scheduler.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "common/model/threading.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "services/executor/executor_server.h"
#include "services/loader/loader_server.h"
#include "services/scheduler/clamp_adapter.h"
#include "services/scheduler/scheduler_server.h"
#include "tests/fixtures/temp_checkpoint.h"
#include "tests/fixtures/test_paths.h"
#include "unmask/v1/executor.grpc.pb.h"
#include "unmask/v1/loader.grpc.pb.h"
#include "unmask/v1/scheduler.grpc.pb.h"

namespace unmask {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using Health = grpc::health::v1::HealthCheckResponse;

std::string Local(int port) { return "127.0.0.1:" + std::to_string(port); }

std::shared_ptr<grpc::Channel> Channel(int port) {
  return grpc::CreateChannel(Local(port), grpc::InsecureChannelCredentials());
}

// The health of `service` ("" for the whole server); UNKNOWN when the call fails.
Health::ServingStatus Check(int port, const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(Channel(port));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  Health resp;
  return stub->Check(&ctx, req, &resp).ok() ? resp.status() : Health::UNKNOWN;
}

class ServerStartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_.File("models/tiny-llada"));
    fs::create_directories(root_.File("shm"));
    for (const auto& f : fs::directory_iterator(unmask::testing::TestDataPath("tiny-llada")))
      fs::copy_file(f.path(), root_.File("models/tiny-llada/" + f.path().filename().string()));
  }

  // A loader on port 0 with no metrics endpoint that looks for leftovers in an empty directory
  // of its own (never /dev/shm, where other tests' loaders live).
  loader::LoaderServerOptions LoaderOptions() const {
    loader::LoaderServerOptions o;
    o.listen = "127.0.0.1:0";
    o.core.model_roots = {root_.File("models")};
    o.core.shm_dir = root_.File("shm");
    o.core.segment_prefix = "unmask-server-start-test-" + std::to_string(::getpid()) + "-";
    o.drain_timeout_seconds = 1;
    o.telemetry.metrics_listen = "";
    return o;
  }

  executor::ExecutorServerOptions ExecutorOptions(int loader_port) const {
    executor::ExecutorServerOptions o;
    o.listen = "127.0.0.1:0";
    o.loader = Local(loader_port);
    o.model = "tiny-llada";
    o.precision = "fp32";
    o.attach_timeout_seconds = 10;
    o.drain_timeout_seconds = 1;
    o.core.executor_id = "executor-server-start-test";
    o.telemetry.metrics_listen = "";
    return o;
  }

  unmask::testing::TempDir root_;
};

TEST_F(ServerStartTest, LoaderStartsPreloadsServesAndShutsDown) {
  loader::LoaderServerOptions o = LoaderOptions();
  o.preload = {"tiny-llada:bf16"};
  auto server = loader::StartLoaderServer(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->port();
  ASSERT_GT(port, 0);
  EXPECT_EQ(Check(port, ""), Health::SERVING);
  EXPECT_EQ(Check(port, "unmask.v1.Loader"), Health::SERVING);

  auto stub = v1::Loader::NewStub(Channel(port));
  grpc::ClientContext ctx;
  v1::ListModelsResponse list;
  ASSERT_TRUE(stub->ListModels(&ctx, v1::ListModelsRequest(), &list).ok());
  ASSERT_EQ(list.models_size(), 1);
  EXPECT_EQ(list.models(0).model_id(), "tiny-llada");
  const std::string segment = list.models(0).segment_name();
  ASSERT_FALSE(segment.empty());
  EXPECT_TRUE(fs::exists("/dev/shm" + segment));

  (*server)->Shutdown();
  (*server)->Wait();  // returns at once: the shutdown is done
  EXPECT_FALSE(fs::exists("/dev/shm" + segment)) << "a stopping loader unlinks its segments";
  EXPECT_EQ(Check(port, ""), Health::UNKNOWN);  // no longer listening
  (*server)->Shutdown();  // idempotent
}

TEST_F(ServerStartTest, LoaderRefusesABadFlagWithExitCode2) {
  loader::LoaderServerOptions o = LoaderOptions();
  o.core.default_precision = "int3";
  auto server = loader::StartLoaderServer(o);
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), HasSubstr("--default-precision"));
  EXPECT_EQ(services::ExitCodeFor(server.status()), 2);
}

TEST_F(ServerStartTest, ExecutorAttachesThroughAnInProcessLoader) {
  auto loader = loader::StartLoaderServer(LoaderOptions());
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  auto server = executor::StartExecutorServer(ExecutorOptions((*loader)->port()));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->port();
  ASSERT_GT(port, 0);
  EXPECT_EQ(Check(port, "unmask.v1.Executor"), Health::SERVING);

  auto stub = v1::Executor::NewStub(Channel(port));
  grpc::ClientContext ctx;
  v1::Capacity capacity;
  ASSERT_TRUE(stub->GetCapacity(&ctx, v1::GetCapacityRequest(), &capacity).ok());
  EXPECT_EQ(capacity.executor_id(), "executor-server-start-test");
  ASSERT_EQ(capacity.models_size(), 1);
  EXPECT_EQ(capacity.models(0), "tiny-llada");
  // --workers 0 (the default): tiny-llada is narrow (d_model 64), so one worker per usable core,
  // each packing up to --max-batch jobs.
  EXPECT_EQ(capacity.max_concurrent_jobs(), model::UsableCores() * 8);

  (*server)->Shutdown();
  EXPECT_EQ(Check(port, ""), Health::UNKNOWN);
  (*loader)->Shutdown();
}

TEST_F(ServerStartTest, ExecutorKeepsTheWorkersItIsGiven) {
  auto loader = loader::StartLoaderServer(LoaderOptions());
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  executor::ExecutorServerOptions o = ExecutorOptions((*loader)->port());
  o.core.workers = 1;
  o.core.max_batch = 3;
  auto server = executor::StartExecutorServer(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto stub = v1::Executor::NewStub(Channel((*server)->port()));
  grpc::ClientContext ctx;
  v1::Capacity capacity;
  ASSERT_TRUE(stub->GetCapacity(&ctx, v1::GetCapacityRequest(), &capacity).ok());
  EXPECT_EQ(capacity.max_concurrent_jobs(), 3);
  (*server)->Shutdown();
  (*loader)->Shutdown();
}

TEST_F(ServerStartTest, ExecutorRefusesABadPrecisionBeforeAskingTheLoader) {
  executor::ExecutorServerOptions o = ExecutorOptions(1);  // nothing listens there: never reached
  o.precision = "fp64";
  auto server = executor::StartExecutorServer(o);
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), HasSubstr("--precision"));
  EXPECT_EQ(services::ExitCodeFor(server.status()), 2);
}

// loader -> executor -> scheduler, all in this process: a real Generate from ids to a result,
// and the HTTP API on a port of its own.
TEST_F(ServerStartTest, SchedulerRunsAJobOnAnInProcessStack) {
  auto loader = loader::StartLoaderServer(LoaderOptions());
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  auto executor = executor::StartExecutorServer(ExecutorOptions((*loader)->port()));
  ASSERT_TRUE(executor.ok()) << executor.status().ToString();
  scheduler::SchedulerServerOptions o;
  o.listen = "127.0.0.1:0";
  o.executors = {Local((*executor)->port())};
  o.model_roots = {root_.File("models")};
  o.http_port = 0;
  o.http.host = "127.0.0.1";
  o.drain_timeout_seconds = 1;
  o.telemetry.metrics_listen = "";
  auto server = scheduler::StartSchedulerServer(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->port();
  ASSERT_GT(port, 0);
  EXPECT_GT((*server)->http_port(), 0);
  EXPECT_EQ(Check(port, "unmask.v1.Scheduler"), Health::SERVING);

  auto stub = v1::Scheduler::NewStub(Channel(port));
  v1::GenerateRequest req;
  req.set_model("tiny-llada");
  for (std::int64_t id : {1, 2, 3}) req.mutable_ids()->add_ids(id);
  req.mutable_params()->set_gen_length(8);
  req.mutable_params()->set_block_length(8);
  req.mutable_params()->set_steps(8);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto reader = stub->Generate(&ctx, req);
  v1::JobEvent ev;
  bool completed = false;
  while (reader->Read(&ev)) {
    if (ev.has_completed()) {
      completed = true;
      EXPECT_EQ(ev.completed().ids_size(), 8);
    }
    EXPECT_FALSE(ev.has_failed()) << ev.failed().message();
  }
  grpc::Status s = reader->Finish();
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(completed);

  (*server)->Shutdown();
  EXPECT_EQ(Check(port, ""), Health::UNKNOWN);
  (*executor)->Shutdown();
  (*loader)->Shutdown();
}

TEST_F(ServerStartTest, SchedulerRefusesAnUnknownExecutorPrecisionNamingTheFlag) {
  scheduler::SchedulerServerOptions o;
  o.listen = "127.0.0.1:0";
  o.telemetry.metrics_listen = "";
  o.executor_precision = "fp8";
  auto server = scheduler::StartSchedulerServer(o);
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), HasSubstr("--executor-precision"));
  EXPECT_THAT(server.status().message(), HasSubstr("'fp8'"));
  EXPECT_EQ(services::ExitCodeFor(server.status()), 2);
  EXPECT_EQ(*scheduler::ExecutorComputeBytes("fp32"), 4);
  EXPECT_EQ(*scheduler::ExecutorComputeBytes("bf16"), 2);
  EXPECT_EQ(*scheduler::ExecutorComputeBytes("fp16"), 2);
  EXPECT_FALSE(scheduler::ExecutorComputeBytes("int8").ok());
}

}  // namespace
}  // namespace unmask
