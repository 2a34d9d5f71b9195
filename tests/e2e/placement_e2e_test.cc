// End-to-end: a job that fits no GPU executor runs on a CPU executor. The GPU executor is a
// stand-in gRPC service in this process (this machine has no GPU) that reports a CUDA device with
// almost no free memory and counts the jobs sent to it; the rest is the real stack (loader, CPU
// executor, scheduler, the unmask CLI).
#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/e2e/stack.h"
#include "unmask/v1/executor.grpc.pb.h"

namespace unmask::testing {
namespace {

using nlohmann::json;

class TinyGpuExecutor final : public v1::Executor::Service {
 public:
  explicit TinyGpuExecutor(std::string config_json) : config_json_(std::move(config_json)) {}
  grpc::Status GetCapacity(grpc::ServerContext*, const v1::GetCapacityRequest*, v1::Capacity* c) override {
    c->set_executor_id("tiny-gpu");
    c->set_device("cuda:0");
    c->set_budget_bytes(4096);  // no request fits
    c->set_max_concurrent_jobs(4);
    c->add_models("tiny-llada");
    c->set_model_config_json(config_json_);
    c->set_precision("bf16");
    return grpc::Status::OK;
  }
  grpc::Status Run(grpc::ServerContext*, const v1::RunRequest*, grpc::ServerWriter<v1::RunEvent>*) override {
    ++runs;
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "this stand-in GPU runs nothing");
  }
  std::atomic<int> runs{0};

 private:
  std::string config_json_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(PlacementEndToEndTest, AJobThatFitsNoGpuRunsOnTheCpuExecutor) {
  Stack stack;
  stack.StartLoader();
  stack.StartExecutor();
  TinyGpuExecutor gpu(ReadFile(stack.model_root() + "/tiny-llada/config.json"));
  int gpu_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &gpu_port);
  builder.RegisterService(&gpu);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_GT(gpu_port, 0);
  stack.StartScheduler({"--executors", "127.0.0.1:" + std::to_string(gpu_port)});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // both executors polled

  CliResult r = stack.Cli(0, "generate --json --model tiny-llada --prompt-ids 1,2,3 --gen-length 64 --block-length 32 --steps 64");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json accepted, started, completed;
  std::stringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    auto ev = json::parse(line, nullptr, false);
    if (ev.is_discarded()) continue;
    if (ev.contains("accepted")) accepted = ev["accepted"];
    if (ev.contains("started")) started = ev["started"];
    if (ev.contains("completed")) completed = ev["completed"];
  }
  ASSERT_FALSE(accepted.is_null()) << r.out;
  EXPECT_EQ(accepted.value("device_class", ""), "cpu") << accepted.dump();
  bool routed = false;
  for (const auto& adj : accepted["adjustments"]) routed |= adj["field"] == "device" && adj["applied"] == "cpu";
  EXPECT_TRUE(routed) << accepted.dump();
  ASSERT_FALSE(started.is_null()) << r.out;
  EXPECT_NE(started.value("executor", ""), "tiny-gpu");
  ASSERT_FALSE(completed.is_null()) << r.out;
  EXPECT_EQ(completed["ids"].size(), 64u);
  EXPECT_EQ(gpu.runs.load(), 0);
  server->Shutdown();
}

}  // namespace
}  // namespace unmask::testing
