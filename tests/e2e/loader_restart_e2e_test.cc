// End to end with the real binaries: weights outlive a loader restart. A loader that is killed
// (or stopped with --keep-segments-on-exit) leaves its segment in /dev/shm; the next loader on
// the same model roots adopts it without reading the checkpoint, and the executor re-attaches
// to the same weights without rebuilding its model. A forced unload: the executor stops serving,
// lets go, the loader frees the weights, and the executor serves again once the model is loaded
// again. Also what the loader and executor binaries do at start with a --device they cannot use.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/e2e/stack.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/fixtures/test_paths.h"
#include "unmask/v1/executor.grpc.pb.h"
#include "unmask/v1/loader.grpc.pb.h"

namespace unmask::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;
constexpr auto kStart = std::chrono::seconds(120);

// Unlinks a segment the test made a loader leave behind, whatever the test's outcome.
struct SegmentCleanup {
  std::string name;
  ~SegmentCleanup() {
    if (!name.empty()) ::shm_unlink(name.c_str());
  }
};

bool ShmExists(const std::string& segment) { return fs::exists("/dev/shm" + segment); }

std::unique_ptr<Process> StartLoader(const std::string& root, int port, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {LOADER_BIN, "--listen", "127.0.0.1:" + std::to_string(port), "--model-root", root,
                                   "--drain-timeout-seconds", "2", "--metrics-listen", "127.0.0.1:0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<Process>(argv);
}

std::unique_ptr<v1::Loader::Stub> LoaderStub(int port) {
  return v1::Loader::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
}

v1::ListModelsResponse ListModels(int loader_port) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ListModelsResponse resp;
  grpc::Status s = LoaderStub(loader_port)->ListModels(&ctx, v1::ListModelsRequest(), &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp;
}

nlohmann::json GoldenCase(int index) {
  std::ifstream in(TestDataPath("tiny-llada.golden.json"));
  return nlohmann::json::parse(in)["cases"][index];
}

// Runs golden case `c` on the executor directly; the generated ids.
std::vector<std::int64_t> RunGolden(int executor_port, const nlohmann::json& c, const std::string& job_id) {
  auto stub = v1::Executor::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(executor_port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  v1::RunRequest req;
  req.set_job_id(job_id);
  req.set_model_id("tiny-llada");
  for (const auto& id : c["prompt"][0]) req.add_prompt_ids(id.get<std::int64_t>());
  req.mutable_params()->set_gen_length(c["gen_length"].get<std::int64_t>());
  req.mutable_params()->set_block_length(c["block_length"].get<std::int64_t>());
  req.mutable_params()->set_steps(c["steps"].get<std::int64_t>());
  req.mutable_params()->set_sampler("reference");
  auto reader = stub->Run(&ctx, req);
  v1::RunEvent ev;
  std::vector<std::int64_t> ids;
  while (reader->Read(&ev)) {
    if (ev.has_completed()) ids.assign(ev.completed().ids().begin(), ev.completed().ids().end());
  }
  grpc::Status s = reader->Finish();
  EXPECT_TRUE(s.ok()) << s.error_message();
  return ids;
}

TEST(LoaderRestartEndToEndTest, ExecutorKeepsItsWeightsAcrossAKilledLoaderWithoutACheckpointRead) {
  Stack stack;  // the model root (tiny-llada); services are started here, on a fixed loader port
  const int loader_port = FreePort();
  auto loader = StartLoader(stack.model_root(), loader_port);
  ASSERT_EQ(loader->WaitForPort("listening on port", kStart), loader_port) << loader->output();
  Process executor({EXECUTOR_BIN, "--listen", "127.0.0.1:0", "--loader", "127.0.0.1:" + std::to_string(loader_port),
                    "--model", "tiny-llada", "--precision", "fp32", "--load-precision", "bf16", "--executor-id",
                    "e2e-restart", "--drain-timeout-seconds", "2", "--metrics-listen", "127.0.0.1:0",
                    "--attach-timeout-seconds", "60"});
  const int executor_port = executor.WaitForPort("unmask-executor: serving", kStart);
  ASSERT_GT(executor_port, 0) << executor.output();

  const nlohmann::json golden = GoldenCase(0);
  const auto expected = golden["output"][0].get<std::vector<std::int64_t>>();
  ASSERT_EQ(RunGolden(executor_port, golden, "before"), expected);

  v1::ListModelsResponse list = ListModels(loader_port);
  ASSERT_EQ(list.models_size(), 1);
  const v1::ModelInfo before = list.models(0);
  SegmentCleanup cleanup{before.segment_name()};
  ASSERT_FALSE(before.segment_name().empty());

  // The loader dies; its segment stays. The checkpoint goes away, so nothing can re-read it.
  loader->Kill(SIGKILL);
  loader->Wait();
  ASSERT_TRUE(ShmExists(before.segment_name()));
  fs::rename(stack.model_root() + "/tiny-llada", stack.model_root() + "/moved-away");
  EXPECT_FALSE(executor.WaitForLine("the loader went away", std::chrono::seconds(30)).empty()) << executor.output();

  loader = StartLoader(stack.model_root(), loader_port);
  ASSERT_EQ(loader->WaitForPort("listening on port", kStart), loader_port) << loader->output();
  EXPECT_THAT(loader->output(), HasSubstr("adopted segment " + before.segment_name() + " (model tiny-llada, bf16"));
  const std::string same = executor.WaitForLine("re-attached to the same weights", std::chrono::seconds(60));
  ASSERT_FALSE(same.empty()) << executor.output() << "\nloader:\n" << loader->output();
  EXPECT_THAT(same, HasSubstr(before.segment_name()));
  EXPECT_THAT(executor.output(), Not(HasSubstr("msg=attached "))) << "the executor rebuilt its model";
  EXPECT_THAT(executor.output(), Not(HasSubstr("re-attach failed")));

  EXPECT_EQ(RunGolden(executor_port, golden, "after"), expected);

  list = ListModels(loader_port);
  ASSERT_EQ(list.models_size(), 1);
  const v1::ModelInfo& after = list.models(0);
  EXPECT_EQ(after.model_id(), "tiny-llada");
  EXPECT_EQ(after.state(), "ready");
  EXPECT_EQ(after.precision(), "bf16");
  EXPECT_EQ(after.resident_bytes(), before.resident_bytes());
  EXPECT_EQ(after.segment_name(), before.segment_name());
  EXPECT_THAT(after.executors(), ::testing::ElementsAre("e2e-restart"));

  {  // LoadModel is idempotent on the adopted model: done, same segment, no checkpoint needed.
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::LoadModelRequest req;
    req.set_model_id("tiny-llada");
    req.set_precision("bf16");
    auto reader = LoaderStub(loader_port)->LoadModel(&ctx, req);
    v1::LoadProgress p, last;
    while (reader->Read(&p)) last = p;
    grpc::Status s = reader->Finish();
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(last.phase(), "done");
    EXPECT_EQ(last.model().segment_name(), before.segment_name());
  }

  // A loader stopped with SIGTERM (no --keep-segments-on-exit) frees the segment.
  executor.Kill(SIGTERM);
  executor.Wait();
  loader->Kill(SIGTERM);
  EXPECT_EQ(loader->Wait(), 0);
  EXPECT_FALSE(ShmExists(before.segment_name()));
}

TEST(LoaderRestartEndToEndTest, KeptSegmentsAreRemovedByALoaderWithAdoptionOff) {
  Stack stack;
  auto loader = StartLoader(stack.model_root(), 0, {"--keep-segments-on-exit", "--preload", "tiny-llada:int8"});
  const int port = loader->WaitForPort("listening on port", kStart);
  ASSERT_GT(port, 0) << loader->output();
  ASSERT_FALSE(loader->WaitForLine("preloaded tiny-llada", kStart).empty()) << loader->output();
  v1::ListModelsResponse list = ListModels(port);
  ASSERT_EQ(list.models_size(), 1);
  const std::string segment = list.models(0).segment_name();
  SegmentCleanup cleanup{segment};
  loader->Kill(SIGTERM);
  EXPECT_EQ(loader->Wait(), 0);
  EXPECT_THAT(loader->output(), HasSubstr("keeping segment for the next loader"));
  ASSERT_TRUE(ShmExists(segment)) << "--keep-segments-on-exit unlinked the segment";

  loader = StartLoader(stack.model_root(), 0, {"--adopt-segments=false"});
  const int port2 = loader->WaitForPort("listening on port", kStart);
  ASSERT_GT(port2, 0) << loader->output();
  const std::string removed = loader->WaitForLine("removed leftover segment", std::chrono::seconds(5));
  EXPECT_THAT(removed, HasSubstr(segment));
  EXPECT_THAT(removed, HasSubstr("adoption is off"));
  EXPECT_FALSE(ShmExists(segment));
  EXPECT_EQ(ListModels(port2).models_size(), 0);
}

grpc::health::v1::HealthCheckResponse::ServingStatus Health(int port) {
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status s = stub->Check(&ctx, grpc::health::v1::HealthCheckRequest(), &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp.status();
}

v1::Capacity Capacity(int executor_port) {
  auto stub = v1::Executor::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(executor_port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::Capacity cap;
  grpc::Status s = stub->GetCapacity(&ctx, v1::GetCapacityRequest(), &cap);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return cap;
}

TEST(LoaderEndToEndTest, AForcedUnloadIsLetGoOfByTheExecutorAndServedAgainOnceReloaded) {
  Stack stack;
  auto loader = StartLoader(stack.model_root(), 0);
  const int loader_port = loader->WaitForPort("listening on port", kStart);
  ASSERT_GT(loader_port, 0) << loader->output();
  Process executor({EXECUTOR_BIN, "--listen", "127.0.0.1:0", "--loader", "127.0.0.1:" + std::to_string(loader_port),
                    "--model", "tiny-llada", "--precision", "fp32", "--load-precision", "bf16", "--executor-id",
                    "e2e-unload", "--drain-timeout-seconds", "2", "--metrics-listen", "127.0.0.1:0"});
  const int executor_port = executor.WaitForPort("unmask-executor: serving", kStart);
  ASSERT_GT(executor_port, 0) << executor.output();
  const nlohmann::json golden = GoldenCase(0);
  ASSERT_EQ(RunGolden(executor_port, golden, "before"), golden["output"][0].get<std::vector<std::int64_t>>());
  const std::string segment = ListModels(loader_port).models(0).segment_name();

  const std::string at_loader = " --loader 127.0.0.1:" + std::to_string(loader_port) + " --model tiny-llada";
  CliResult r = RunCli("unload" + at_loader);  // attached: refused, naming who uses it
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT(r.out, HasSubstr("e2e-unload"));
  r = RunCli("unload --force" + at_loader);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("unloading tiny-llada; freed once these executors let go: e2e-unload"));
  ASSERT_FALSE(executor.WaitForLine("let go of the unloaded weights", std::chrono::seconds(30)).empty())
      << executor.output();
  EXPECT_EQ(Health(executor_port), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Capacity(executor_port).models_size(), 0);
  {  // A job sent anyway is refused as retryable elsewhere, naming the model.
    auto stub = v1::Executor::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(executor_port), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    v1::RunRequest req;
    req.set_job_id("refused");
    req.set_model_id("tiny-llada");
    req.add_prompt_ids(1);
    auto reader = stub->Run(&ctx, req);
    v1::RunEvent ev;
    while (reader->Read(&ev)) {
    }
    grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(s.error_message(), HasSubstr("'tiny-llada' was unloaded"));
  }
  for (int i = 0; i < 100 && ListModels(loader_port).models_size() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(ListModels(loader_port).models_size(), 0) << "the loader keeps a model nobody uses";
  EXPECT_FALSE(ShmExists(segment));

  r = RunCli("unload" + at_loader);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("model 'tiny-llada' is not loaded"));

  r = RunCli("load --precision int8" + at_loader);  // loaded again, at int8: the executor serves it
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("tiny-llada ready int8"));
  ASSERT_FALSE(executor.WaitForLine("msg=attached", std::chrono::seconds(30)).empty()) << executor.output();
  EXPECT_EQ(Health(executor_port), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(Capacity(executor_port).precision(), "int8");
  EXPECT_EQ(RunGolden(executor_port, golden, "after").size(), golden["output"][0].size());
  EXPECT_THAT(ListModels(loader_port).models(0).executors(), ::testing::ElementsAre("e2e-unload"));

  executor.Kill(SIGTERM);
  EXPECT_EQ(executor.Wait(), 0);
  loader->Kill(SIGTERM);
  EXPECT_EQ(loader->Wait(), 0);
}

TEST(LoaderBinaryTest, ADeviceItCannotUseStopsItAtStartNamingTheDevice) {
  TempDir root;
  {
    // Not a device name: a usage error (exit 2).
    auto loader = StartLoader(root.path(), FreePort(), {"--device", "gpu0"});
    EXPECT_EQ(loader->Wait(), 2);
    EXPECT_THAT(loader->output(), HasSubstr("--device: device 'gpu0': expected cpu, cuda or cuda:N"));
  }
  {
    // A GPU no machine has (or no GPU at all): refused before serving (exit 1), naming it.
    auto loader = StartLoader(root.path(), FreePort(), {"--device", "cuda:999"});
    EXPECT_EQ(loader->Wait(), 1);
    EXPECT_THAT(loader->output(), HasSubstr("device cuda:999"));
    EXPECT_THAT(loader->output(), Not(HasSubstr("listening")));
  }
}

TEST(ExecutorBinaryTest, ABadDeviceStopsItBeforeItAsksTheLoaderForAnything) {
  // A loader with the model, so that an executor that went on would load it there.
  Stack stack;
  const int loader_port = FreePort();
  auto loader = StartLoader(stack.model_root(), loader_port);
  ASSERT_EQ(loader->WaitForPort("listening on port", kStart), loader_port) << loader->output();
  Process executor({EXECUTOR_BIN, "--listen", "127.0.0.1:0", "--loader", "127.0.0.1:" + std::to_string(loader_port),
                    "--model", "tiny-llada", "--device", "gpu0", "--metrics-listen", "127.0.0.1:0",
                    "--attach-timeout-seconds", "5"});
  EXPECT_EQ(executor.Wait(), 2);
  EXPECT_THAT(executor.output(), HasSubstr("device 'gpu0'"));
  Process threads({EXECUTOR_BIN, "--listen", "127.0.0.1:0", "--loader", "127.0.0.1:" + std::to_string(loader_port),
                   "--model", "tiny-llada", "--intra-op-threads", "-1", "--metrics-listen", "127.0.0.1:0",
                   "--attach-timeout-seconds", "5"});
  EXPECT_EQ(threads.Wait(), 2);
  EXPECT_THAT(threads.output(), HasSubstr("--intra-op-threads: intra-op threads must be >= 0"));
  EXPECT_EQ(ListModels(loader_port).models_size(), 0);  // nothing was loaded for either
  loader->Kill(SIGTERM);
  EXPECT_EQ(loader->Wait(), 0);
}

}  // namespace
}  // namespace unmask::testing
