// Where an accepted job may run: fitted to the GPU executors serving its model, or routed to a CPU
// executor (and clamped to its memory) when it does not fit any GPU even at the minimum. Runs the
// real SchedulerCore, clamp and in-process job store over capacity snapshots (no servers).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/jobs/memory_job_store.h"
#include "services/scheduler/clamp_adapter.h"
#include "services/scheduler/dispatch_policy.h"
#include "services/scheduler/scheduler_core.h"

namespace unmask::scheduler {
namespace {

using ::testing::HasSubstr;

constexpr std::uint64_t kTiny = 1024;           // nothing fits
constexpr std::uint64_t kLarge = 64ull << 30;   // everything fits

std::string TinyConfigJson() {
  std::ifstream in(std::string(UNMASK_TEST_DATA_DIR) + "/tiny-llada/config.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ExecutorSnapshot Executor(const std::string& address, const std::string& device, std::uint64_t budget) {
  ExecutorSnapshot e;
  e.address = address;
  e.executor_id = address;
  e.healthy = true;
  e.models = {"tiny"};
  e.max_concurrent = 4;
  e.budget_bytes = budget;
  e.model_config_json = TinyConfigJson();
  e.precision = "bf16";
  e.device = device;
  return e;
}

class PlacementTest : public ::testing::Test {
 protected:
  StatusOr<v1::SubmitResponse> Submit(std::vector<ExecutorSnapshot> executors) {
    executors_ = std::move(executors);
    v1::GenerateRequest r;
    r.set_model("tiny");
    for (int id : {11, 12, 13, 14}) r.mutable_ids()->add_ids(id);
    r.mutable_params()->set_gen_length(256);
    r.mutable_params()->set_block_length(32);
    r.mutable_params()->set_steps(256);
    return core_.Accept(r, "");
  }
  v1::StoredJob Stored(const std::string& job_id) {
    auto record = store_.Get(job_id);
    EXPECT_TRUE(record.ok()) << record.status().ToString();
    v1::StoredJob stored;
    EXPECT_TRUE(record.ok() && stored.ParseFromString(record->payload));
    return stored;
  }

  jobs::MemoryJobStore store_;
  std::vector<ExecutorSnapshot> executors_;
  ModelCatalog catalog_{{}};
  SchedulerCore core_{store_, [this] { return executors_; }, catalog_,
                      MakeClamper(memory::ClampPolicy::kStandard, 2), SchedulerOptions{}};
};

const v1::Adjustment* Find(const v1::Accepted& a, const std::string& field) {
  for (const auto& adj : a.adjustments())
    if (adj.field() == field) return &adj;
  return nullptr;
}

TEST_F(PlacementTest, AJobThatFitsAGpuStaysOnGpus) {
  auto resp = Submit({Executor("gpu", "cuda:0", kLarge), Executor("cpu", "cpu", kLarge)});
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->accepted().device_class(), kDeviceClassAccelerator);
  EXPECT_EQ(Find(resp->accepted(), "device"), nullptr);
  EXPECT_EQ(resp->accepted().params().gen_length(), 256);
}

TEST_F(PlacementTest, AJobThatFitsNoGpuIsRoutedToACpuExecutorAndSaysSo) {
  auto resp = Submit({Executor("gpu", "cuda:0", kTiny), Executor("cpu", "cpu", kLarge)});
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->accepted().device_class(), kDeviceClassCpu);
  const v1::Adjustment* routed = Find(resp->accepted(), "device");
  ASSERT_NE(routed, nullptr);
  EXPECT_EQ(routed->asked(), kDeviceClassAccelerator);
  EXPECT_EQ(routed->applied(), kDeviceClassCpu);
  EXPECT_THAT(routed->reason(), HasSubstr("1024 bytes"));
  // Clamped to the CPU's memory (which fits it whole), and stored with its placement.
  EXPECT_EQ(resp->accepted().params().gen_length(), 256);
  EXPECT_EQ(Stored(resp->job_id()).accepted().device_class(), kDeviceClassCpu);
}

TEST_F(PlacementTest, WithoutACpuExecutorItIsRefused) {
  auto resp = Submit({Executor("gpu", "cuda:0", kTiny)});
  EXPECT_EQ(resp.status().code(), StatusCode::kResourceExhausted);
}

TEST_F(PlacementTest, WhenTheCpuCannotTakeItEitherBothReasonsAreGiven) {
  auto resp = Submit({Executor("gpu", "cuda:0", kTiny), Executor("cpu", "cpu", kTiny)});
  EXPECT_EQ(resp.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(resp.status().message(), HasSubstr("CPU executor cannot take it either"));
}

TEST_F(PlacementTest, CpuOnlyDeploymentsRunAnywhereAndUnhealthyOrOtherModelExecutorsDoNotCount) {
  auto unhealthy_gpu = Executor("gpu", "cuda:0", kTiny);
  unhealthy_gpu.healthy = false;
  auto other_model_gpu = Executor("gpu2", "cuda:1", kTiny);
  other_model_gpu.models = {"other"};
  auto resp = Submit({unhealthy_gpu, other_model_gpu, Executor("cpu", "cpu", kLarge)});
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->accepted().device_class(), "");
  EXPECT_EQ(Find(resp->accepted(), "device"), nullptr);
}

TEST(DeviceClassTest, TheDispatcherHonoursThePlacement) {
  std::vector<ExecutorSnapshot> executors = {Executor("gpu", "cuda:0", kLarge), Executor("cpu", "cpu", kLarge)};
  Dispatcher d(DispatchPolicy::kLeastBusy, 0);
  EXPECT_EQ(d.Pick(executors, "tiny", kDeviceClassCpu), 1);
  EXPECT_EQ(d.Pick(executors, "tiny", kDeviceClassAccelerator), 0);
  executors[0].running = 4;  // the GPU is full: an accelerator job waits, it does not go to the CPU
  EXPECT_EQ(d.Pick(executors, "tiny", kDeviceClassAccelerator), -1);
  EXPECT_EQ(d.Pick(executors, "tiny", ""), 1);
  EXPECT_TRUE(IsCpuDevice("cpu"));
  EXPECT_TRUE(IsCpuDevice(""));
  EXPECT_FALSE(IsCpuDevice("cuda:0"));
  EXPECT_FALSE(IsCpuDevice("cuda"));
}

}  // namespace
}  // namespace unmask::scheduler
