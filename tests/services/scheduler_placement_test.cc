// Where an accepted job may run: fitted to the GPU executors serving its model, or routed to a CPU
// executor (and clamped to its memory) when it does not fit any GPU even at the minimum. Runs the
// real SchedulerCore, clamp and in-process job store over capacity snapshots (no servers).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <optional>
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
  StatusOr<v1::SubmitResponse> Submit(std::vector<ExecutorSnapshot> executors,
                                      const std::function<void(v1::GenerationParams&)>& edit = {}) {
    return SubmitTo(core_, std::move(executors), edit);
  }
  StatusOr<v1::SubmitResponse> SubmitTo(SchedulerCore& core, std::vector<ExecutorSnapshot> executors,
                                        const std::function<void(v1::GenerationParams&)>& edit = {}) {
    executors_ = std::move(executors);
    v1::GenerateRequest r;
    r.set_model("tiny");
    for (int id : {11, 12, 13, 14}) r.mutable_ids()->add_ids(id);
    r.mutable_params()->set_gen_length(256);
    r.mutable_params()->set_block_length(32);
    r.mutable_params()->set_steps(256);
    if (edit) edit(*r.mutable_params());
    return core.Accept(r, "");
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
                      MakeClamper(fitting::ClampPolicy::kStandard, 2), SchedulerOptions{}};
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

// early_stop as the job's acceptance, its stored run request (what the executor gets) and
// GetJob all show it.
void ExpectEarlyStopEverywhere(SchedulerCore& core, const v1::StoredJob& stored, const std::string& job_id,
                               const v1::Accepted& accepted, std::optional<bool> expected) {
  const auto info = core.GetJob(job_id);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  for (const v1::GenerationParams* p : {&accepted.params(), &stored.run().params(), &stored.accepted().params(), &info->params()}) {
    ASSERT_EQ(p->has_early_stop(), expected.has_value()) << p->DebugString();
    if (expected) { EXPECT_EQ(p->early_stop(), *expected) << p->DebugString(); }
  }
}

// The accepted params state every field as it will run: an unset early_stop is on (the
// generation library's default), for the reference too, which has no early stop and ignores it.
TEST_F(PlacementTest, EarlyStopUnsetIsOnAndStatedInTheAcceptedParams) {
  const std::vector<ExecutorSnapshot> large = {Executor("gpu", "cuda:0", kLarge)};
  auto fast = Submit(large, [](v1::GenerationParams& p) { p.set_sampler("dual_cache"); });
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  ExpectEarlyStopEverywhere(core_, Stored(fast->job_id()), fast->job_id(), fast->accepted(), true);

  auto reference = Submit(large);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  ExpectEarlyStopEverywhere(core_, Stored(reference->job_id()), reference->job_id(), reference->accepted(), true);

  for (bool asked : {false, true}) {
    for (const char* sampler : {"threshold", "reference"}) {
      auto r = Submit(large, [&](v1::GenerationParams& p) {
        p.set_sampler(sampler);
        p.set_early_stop(asked);
      });
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ExpectEarlyStopEverywhere(core_, Stored(r->job_id()), r->job_id(), r->accepted(), asked);
    }
  }
}

TEST_F(PlacementTest, TheClampNeverChangesEarlyStop) {
  // Budgets between "fits whole" and "nothing fits" make the clamp change the request.
  int clamped = 0;
  for (std::uint64_t kib = 1 << 20; kib >= 1; kib /= 2) {
    for (bool asked : {false, true}) {
      auto r = Submit({Executor("gpu", "cuda:0", kib << 10)}, [&](v1::GenerationParams& p) {
        p.set_sampler("dual_cache");
        p.set_early_stop(asked);
      });
      if (!r.ok() || r->accepted().adjustments().empty()) continue;
      ++clamped;
      ExpectEarlyStopEverywhere(core_, Stored(r->job_id()), r->job_id(), r->accepted(), asked);
    }
  }
  EXPECT_GT(clamped, 0) << "no budget made the clamp change the request";
}

TEST_F(PlacementTest, AReferenceRequestClampedToAFastModeKeepsEarlyStopAsAskedOrOnByDefault) {
  // The extreme clamp may swap reference for a fast mode: an early_stop the request gave then
  // applies; an unset one becomes the fast modes' default (on), as before the field existed.
  // Sampled: the reference then takes logits for every position, and dual_cache for the block
  // only (greedy, both take the block's: the swap would save nothing, and is not made).
  SchedulerCore extreme{store_, [this] { return executors_; }, catalog_, MakeClamper(fitting::ClampPolicy::kExtreme, 2),
                        SchedulerOptions{}};
  int swapped = 0;
  for (std::uint64_t kib = 1 << 20; kib >= 1; kib /= 2) {
    for (std::optional<bool> asked : {std::optional<bool>(), std::optional<bool>(false)}) {
      auto r = SubmitTo(extreme, {Executor("gpu", "cuda:0", kib << 10)}, [&](v1::GenerationParams& p) {
        p.set_temperature(0.7);
        if (asked) p.set_early_stop(*asked);
      });
      if (!r.ok() || r->accepted().params().sampler() == "reference") continue;
      ++swapped;
      ExpectEarlyStopEverywhere(extreme, Stored(r->job_id()), r->job_id(), r->accepted(), asked.value_or(true));
    }
  }
  EXPECT_GT(swapped, 0) << "no budget made the clamp swap the sampler";
}

}  // namespace
}  // namespace unmask::scheduler
