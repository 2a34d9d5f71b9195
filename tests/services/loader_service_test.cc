// The loader over real gRPC on port 0: loading the golden checkpoint with progress, attaching
// from a second process, reference-counted unload, bad checkpoints and path escapes.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "grpc/health/v1/health.grpc.pb.h"
#include "services/common/server_runner.h"
#include "services/loader/load_trace.h"
#include "services/loader/loader_core.h"
#include "services/loader/loader_grpc.h"
#include "tests/fixtures/temp_checkpoint.h"
#include "tests/fixtures/test_paths.h"
#include "tests/telemetry/memory_exporter.h"

namespace unmask::loader {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::uint64_t Fnv1a(const std::string& bytes) {
  std::uint64_t sum = 1469598103934665603ull;
  for (unsigned char c : bytes) sum = (sum ^ c) * 1099511628211ull;
  return sum;
}

// A child process whose stdout we read line by line.
class Probe {
 public:
  explicit Probe(const std::vector<std::string>& args) {
    int fds[2], in[2];
    EXPECT_EQ(::pipe(fds), 0);
    EXPECT_EQ(::pipe(in), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      ::dup2(in[0], 0);
      ::close(fds[0]);
      ::close(in[1]);
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    ::close(in[0]);
    in_ = in[1];
    out_ = ::fdopen(fds[0], "r");
  }
  // Closes the probe's standard input: a revoked probe then lets go of the weights and exits.
  void CloseInput() {
    if (in_ >= 0) ::close(in_);
    in_ = -1;
  }
  ~Probe() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_) std::fclose(out_);
    CloseInput();
  }
  std::string ReadLine() {
    char buf[1024];
    if (std::fgets(buf, sizeof(buf), out_) == nullptr) return "";
    std::string s(buf);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  int Wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  FILE* out_ = nullptr;
};

class LoaderServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A model root holding the golden checkpoint, a broken copy, and nothing else.
    fs::create_directories(root_.File("tiny-llada"));
    for (const auto& f : fs::directory_iterator(unmask::testing::TestDataPath("tiny-llada")))
      fs::copy_file(f.path(), root_.File("tiny-llada/" + f.path().filename().string()));
    fs::create_directories(root_.File("broken"));
    for (const auto& f : fs::directory_iterator(unmask::testing::TestDataPath("tiny-llada")))
      fs::copy_file(f.path(), root_.File("broken/" + f.path().filename().string()));
    const std::string shard = root_.File("broken/model-00002-of-00002.safetensors");
    const std::string bytes = unmask::testing::ReadFile(shard);
    unmask::testing::WriteFile(shard, bytes.substr(0, bytes.size() / 3));

    LoaderOptions options;
    options.model_roots = {root_.path()};
    core_ = std::make_unique<LoaderCore>(options);
    service_ = std::make_unique<LoaderGrpcService>(*core_);
    runner_ = std::make_unique<services::ServerRunner>("Loader");
    runner_->AddService(service_.get());
    ASSERT_TRUE(runner_->Start("127.0.0.1:0").ok());
    runner_->SetServing(true);
    address_ = "127.0.0.1:" + std::to_string(runner_->port());
    stub_ = v1::Loader::NewStub(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    for (const auto& m : core_->List()) (void)core_->Unload(m.model_id, /*force=*/true);
    runner_->Drain(std::chrono::seconds(1));
  }

  grpc::Status Load(const std::string& model, const std::string& precision, std::vector<v1::LoadProgress>* seen) {
    grpc::ClientContext ctx;
    v1::LoadModelRequest req;
    req.set_model_id(model);
    req.set_precision(precision);
    auto reader = stub_->LoadModel(&ctx, req);
    v1::LoadProgress p;
    while (reader->Read(&p)) seen->push_back(p);
    return reader->Finish();
  }

  unmask::testing::TempDir root_;
  std::unique_ptr<LoaderCore> core_;
  std::unique_ptr<LoaderGrpcService> service_;
  std::unique_ptr<services::ServerRunner> runner_;
  std::string address_;
  std::unique_ptr<v1::Loader::Stub> stub_;
};

TEST_F(LoaderServiceTest, LoadsWithProgressAndListsTheModel) {
  std::vector<v1::LoadProgress> seen;
  grpc::Status s = Load("tiny-llada", "bf16", &seen);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_FALSE(seen.empty());
  const auto& last = seen.back();
  EXPECT_EQ(last.phase(), "done");
  EXPECT_EQ(last.model().state(), "ready");
  EXPECT_EQ(last.model().precision(), "bf16");
  EXPECT_GE(last.model().resident_bytes(), 32539264u);  // the checkpoint's bytes, plus header/padding
  for (std::size_t i = 1; i + 1 < seen.size(); ++i) EXPECT_GE(seen[i].bytes_done(), seen[i - 1].bytes_done());

  grpc::ClientContext ctx;
  v1::ListModelsResponse list;
  ASSERT_TRUE(stub_->ListModels(&ctx, v1::ListModelsRequest(), &list).ok());
  ASSERT_EQ(list.models_size(), 1);
  EXPECT_EQ(list.models(0).model_id(), "tiny-llada");
  EXPECT_GT(list.budget_bytes(), 0u);
  EXPECT_EQ(list.resident_bytes(), last.model().resident_bytes());
  // A CPU loader: no GPU copy, no GPU budget.
  EXPECT_EQ(list.models(0).device(), "cpu");
  EXPECT_EQ(list.models(0).device_bytes(), 0u);
  EXPECT_EQ(list.device_budget_bytes(), 0u);
  EXPECT_EQ(list.device_budget_source(), "");

  // Loading again is idempotent; another precision is refused while loaded.
  seen.clear();
  EXPECT_TRUE(Load("tiny-llada", "bf16", &seen).ok());
  s = Load("tiny-llada", "int8", &seen);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("unload it before loading it as int8"));
}

TEST_F(LoaderServiceTest, ConcurrentLoadsShareOneLoad) {
  std::vector<v1::LoadProgress> a, b;
  grpc::Status sa, sb;
  std::thread t1([&] { sa = Load("tiny-llada", "int4:g32", &a); });
  std::thread t2([&] { sb = Load("tiny-llada", "int4:g32", &b); });
  t1.join();
  t2.join();
  ASSERT_TRUE(sa.ok() && sb.ok()) << sa.error_message() << sb.error_message();
  EXPECT_EQ(a.back().model().segment_name(), b.back().model().segment_name());
}

TEST_F(LoaderServiceTest, SecondProcessAttachesAndSeesTheSameBytes) {
  std::vector<v1::LoadProgress> seen;
  ASSERT_TRUE(Load("tiny-llada", "bf16", &seen).ok());
  Probe probe({ATTACH_PROBE_BIN, address_, "tiny-llada", "executor-1", "model.transformer.ln_f.weight"});
  const std::string line = probe.ReadLine();
  ASSERT_THAT(line, HasSubstr("checksum")) << line;

  auto ckpt = checkpoint::Checkpoint::Open(unmask::testing::TestDataPath("tiny-llada"));
  ASSERT_TRUE(ckpt.ok());
  auto ref = (*ckpt)->Find("model.transformer.ln_f.weight");
  const std::string source(reinterpret_cast<const char*>(ref->data()), ref->info->nbytes);
  EXPECT_THAT(line, HasSubstr("checksum " + std::to_string(Fnv1a(source))));

  // Attached: a plain unload is refused naming the executor; a forced one revokes.
  grpc::ClientContext c1;
  v1::UnloadModelRequest unload;
  unload.set_model_id("tiny-llada");
  v1::UnloadModelResponse resp;
  grpc::Status s = stub_->UnloadModel(&c1, unload, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("executor-1"));

  unload.set_force(true);
  grpc::ClientContext c2;
  ASSERT_TRUE(stub_->UnloadModel(&c2, unload, &resp).ok());
  ASSERT_EQ(resp.notified_executors_size(), 1);
  EXPECT_EQ(resp.notified_executors(0), "executor-1");
  // Until the executor lets go, the model stays (unloading, still listing it); once it closed
  // its lease, the model is freed.
  EXPECT_EQ(probe.ReadLine(), "revoked");
  ASSERT_EQ(core_->List().size(), 1u);
  EXPECT_EQ(core_->List()[0].state, weights::ModelState::kUnloading);
  EXPECT_GT(core_->resident_bytes(), 0u);
  probe.CloseInput();
  EXPECT_EQ(probe.Wait(), 0);
  for (int i = 0; i < 100 && !core_->List().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(core_->List().empty());
  EXPECT_EQ(core_->resident_bytes(), 0u);
}

TEST_F(LoaderServiceTest, AnExecutorThatDiesIsDetached) {
  std::vector<v1::LoadProgress> seen;
  ASSERT_TRUE(Load("tiny-llada", "bf16", &seen).ok());
  {
    Probe probe({ATTACH_PROBE_BIN, address_, "tiny-llada", "executor-2", "model.transformer.ln_f.weight"});
    ASSERT_THAT(probe.ReadLine(), HasSubstr("checksum"));
    ASSERT_EQ(core_->List()[0].executors.size(), 1u);
  }  // SIGKILL
  for (int i = 0; i < 100 && !core_->List()[0].executors.empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(core_->List()[0].executors.empty());
  EXPECT_TRUE(core_->Unload("tiny-llada", /*force=*/false).ok());
}

TEST_F(LoaderServiceTest, BadCheckpointFailsThatLoadOnly) {
  std::vector<v1::LoadProgress> seen;
  grpc::Status s = Load("broken", "bf16", &seen);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DATA_LOSS);
  EXPECT_THAT(s.error_message(), HasSubstr("model-00002-of-00002.safetensors"));
  EXPECT_THAT(s.error_message(), HasSubstr("tensor 'model.transformer."));
  EXPECT_TRUE(Load("tiny-llada", "bf16", &seen).ok()) << "the loader stopped serving after a bad load";
}

TEST_F(LoaderServiceTest, RefusesBadRequestsNamingTheField) {
  std::vector<v1::LoadProgress> seen;
  grpc::Status s = Load("../../etc", "bf16", &seen);
  EXPECT_NE(s.error_code(), grpc::StatusCode::OK);
  EXPECT_THAT(s.error_message(), HasSubstr("../../etc"));
  s = Load("", "bf16", &seen);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("model_id"));
  s = Load("tiny-llada", "int5", &seen);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("int5"));
  s = Load("no-such-model", "", &seen);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);

  grpc::ClientContext ctx;
  v1::AttachModelRequest attach;
  attach.set_model_id("tiny-llada");
  auto reader = stub_->AttachModel(&ctx, attach);
  v1::AttachEvent ev;
  EXPECT_FALSE(reader->Read(&ev));
  s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("executor_id"));

  grpc::ClientContext c2;
  v1::UnloadModelRequest unload;
  v1::UnloadModelResponse resp;
  EXPECT_EQ(stub_->UnloadModel(&c2, unload, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(LoaderServiceTest, HealthFollowsTheServingState) {
  auto health = grpc::health::v1::Health::NewStub(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  auto check = [&](const std::string& service) {
    grpc::ClientContext ctx;
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    grpc::Status s = health->Check(&ctx, req, &resp);
    return s.ok() ? resp.status() : grpc::health::v1::HealthCheckResponse::UNKNOWN;
  };
  EXPECT_EQ(check(""), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(check("unmask.v1.Loader"), grpc::health::v1::HealthCheckResponse::SERVING);
  runner_->SetServing(false);
  EXPECT_EQ(check(""), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(check("unmask.v1.Loader"), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
}

// A loader that went away without unlinking (killed, or --keep-segments-on-exit) leaves its
// segment; the next loader on the same model roots adopts it and serves it with no checkpoint
// read, and never takes a segment whose loader still runs.
TEST_F(LoaderServiceTest, ARestartedLoaderAdoptsTheSegmentOfTheOneThatWentAway) {
  std::vector<v1::LoadProgress> seen;
  ASSERT_TRUE(Load("tiny-llada", "bf16", &seen).ok());
  const v1::ModelInfo before = seen.back().model();
  const std::string segment = before.segment_name();
  LoaderOptions options;
  options.model_roots = {root_.path()};
  options.segment_prefix = "unmask-tiny-llada-" + std::to_string(::getpid()) + "-";  // this test's only

  {  // While the first loader lives, a second one leaves its segment alone.
    LoaderCore other(options);
    const auto scan = other.AdoptLeftoverSegments(true);
    EXPECT_TRUE(scan.adopted.empty());
    ASSERT_EQ(scan.skipped.size(), 1u);
    EXPECT_EQ(scan.skipped[0].segment, segment);
    EXPECT_THAT(scan.skipped[0].reason, HasSubstr("owned by a live loader"));
    EXPECT_TRUE(other.List().empty());
  }

  // The first loader goes away without unloading; the checkpoint goes away too.
  runner_->Drain(std::chrono::seconds(1));
  runner_.reset();
  service_.reset();
  core_.reset();
  ASSERT_TRUE(fs::exists("/dev/shm" + segment));
  fs::rename(root_.File("tiny-llada"), root_.File("moved-away"));

  core_ = std::make_unique<LoaderCore>(options);
  const auto scan = core_->AdoptLeftoverSegments(true);
  ASSERT_EQ(scan.adopted.size(), 1u);
  EXPECT_EQ(scan.adopted[0].model->segment.name(), segment);
  service_ = std::make_unique<LoaderGrpcService>(*core_);
  runner_ = std::make_unique<services::ServerRunner>("Loader");
  runner_->AddService(service_.get());
  ASSERT_TRUE(runner_->Start("127.0.0.1:0").ok());
  runner_->SetServing(true);
  address_ = "127.0.0.1:" + std::to_string(runner_->port());
  stub_ = v1::Loader::NewStub(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));

  grpc::ClientContext ctx;
  v1::ListModelsResponse list;
  ASSERT_TRUE(stub_->ListModels(&ctx, v1::ListModelsRequest(), &list).ok());
  ASSERT_EQ(list.models_size(), 1);
  EXPECT_EQ(list.models(0).model_id(), "tiny-llada");
  EXPECT_EQ(list.models(0).state(), "ready");
  EXPECT_EQ(list.models(0).precision(), "bf16");
  EXPECT_EQ(list.models(0).resident_bytes(), before.resident_bytes());
  EXPECT_EQ(list.models(0).segment_name(), segment);

  // LoadModel is idempotent: done at once, from the adopted segment (the checkpoint is gone).
  seen.clear();
  grpc::Status s = Load("tiny-llada", "bf16", &seen);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(seen.back().model().segment_name(), segment);
  EXPECT_EQ(Load("tiny-llada", "int8", &seen).error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  {  // An executor attaches and reads the checkpoint's bytes.
    Probe probe({ATTACH_PROBE_BIN, address_, "tiny-llada", "executor-9", "model.transformer.ln_f.weight"});
    const std::string line = probe.ReadLine();
    auto ckpt = checkpoint::Checkpoint::Open(unmask::testing::TestDataPath("tiny-llada"));
    ASSERT_TRUE(ckpt.ok());
    auto ref = (*ckpt)->Find("model.transformer.ln_f.weight");
    const std::string source(reinterpret_cast<const char*>(ref->data()), ref->info->nbytes);
    EXPECT_THAT(line, HasSubstr("attached " + segment + " checksum " + std::to_string(Fnv1a(source))));
  }
  for (int i = 0; i < 100 && !core_->List()[0].executors.empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Unload frees it.
  grpc::ClientContext c2;
  v1::UnloadModelRequest unload;
  unload.set_model_id("tiny-llada");
  v1::UnloadModelResponse resp;
  s = stub_->UnloadModel(&c2, unload, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(fs::exists("/dev/shm" + segment));
  EXPECT_TRUE(core_->List().empty());
  if (fs::exists("/dev/shm" + segment)) (void)weights::ShmSegment::UnlinkName(segment);
}

TEST(LoaderLoadTraceTest, LayerOfTensorNamesTheBlock) {
  EXPECT_EQ(LayerOfTensor("model.transformer.blocks.0.q_proj.weight"), "blocks.0");
  EXPECT_EQ(LayerOfTensor("model.transformer.blocks.31.ff_out.weight"), "blocks.31");
  EXPECT_EQ(LayerOfTensor("model.layers.7.mlp.up_proj.weight"), "layers.7");
  EXPECT_EQ(LayerOfTensor("model.transformer.wte.weight"), "");
  EXPECT_EQ(LayerOfTensor("model.transformer.ff_out.weight"), "");
  EXPECT_EQ(LayerOfTensor("model.transformer.blocks.x.weight"), "");
  EXPECT_EQ(LayerOfTensor("model.transformer.subblocks.3.weight"), "");
}

// Every tensor reaches the trace (not only the progress a watcher happens to see), so each layer
// gets exactly one span, a child of the LoadModel span, ended before the next one starts.
TEST_F(LoaderServiceTest, ALoadIsTracedWithASpanPerLayer) {
  auto exporter = std::make_shared<telemetry::testing::MemoryExporter>();
  telemetry::Tracer tracer("unmask-loader", exporter, 1.0);
  telemetry::ServiceMetrics metrics;
  LoaderOptions options;
  options.model_roots = {root_.path()};
  LoaderCore core(options, MetricsLoadHooks(&metrics));
  LoaderGrpcService service(core, tracer, &metrics);
  services::ServerRunner runner("Loader");
  runner.AddService(&service);
  ASSERT_TRUE(runner.Start("127.0.0.1:0").ok());
  auto stub = v1::Loader::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(runner.port()), grpc::InsecureChannelCredentials()));
  for (int i = 0; i < 2; ++i) {  // the second finds it loaded: a span, no layers
    grpc::ClientContext ctx;
    v1::LoadModelRequest req;
    req.set_model_id("tiny-llada");
    auto reader = stub->LoadModel(&ctx, req);
    v1::LoadProgress p;
    while (reader->Read(&p)) {
    }
    ASSERT_TRUE(reader->Finish().ok());
  }
  (void)core.Unload("tiny-llada", /*force=*/true);
  runner.Drain(std::chrono::seconds(1));

  auto spans = exporter->Take();
  std::vector<const telemetry::SpanData*> loads, layers;
  for (const auto& s : spans) {
    if (s->name == "LoadModel") loads.push_back(s.get());
    if (s->name.rfind("blocks.", 0) == 0) layers.push_back(s.get());
  }
  ASSERT_EQ(loads.size(), 2u);
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0]->name, "blocks.0");
  EXPECT_EQ(layers[1]->name, "blocks.1");
  EXPECT_LE(layers[0]->end_unix_nano, layers[1]->start_unix_nano);
  for (const auto* l : layers) {
    EXPECT_EQ(l->parent_span_id, loads[0]->context.span_id);
    EXPECT_EQ(l->context.trace_id, loads[0]->context.trace_id);
    EXPECT_EQ(l->status, telemetry::SpanStatus::kUnset);
  }
  EXPECT_FALSE(loads[0]->has_parent());
  EXPECT_EQ(loads[0]->status, telemetry::SpanStatus::kOk);
  EXPECT_NE(loads[1]->context.trace_id, loads[0]->context.trace_id);
  auto attribute = [](const telemetry::SpanData* s, const std::string& key) -> std::string {
    for (const auto& a : s->attributes) {
      if (a.key != key) continue;
      if (const auto* v = std::get_if<std::string>(&a.value)) return *v;
      if (const auto* v = std::get_if<std::int64_t>(&a.value)) return std::to_string(*v);
      if (const auto* v = std::get_if<bool>(&a.value)) return *v ? "true" : "false";
    }
    return "";
  };
  EXPECT_EQ(attribute(layers[0], "tensors"), "9");
  EXPECT_EQ(attribute(loads[0], "load.layers"), "2");
  EXPECT_EQ(attribute(loads[0], "load.ran"), "true");
  EXPECT_EQ(attribute(loads[1], "load.ran"), "false");
}

}  // namespace
}  // namespace unmask::loader
