// Where the loader keeps weights (--device): parsing, a device that cannot be used, and a load
// whose GPU copy fails, which fails that load only, leaves no segment behind and keeps the loader
// serving. cuda:999 does not exist on any machine, so these run (and mean the same) everywhere.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "common/segment/shm_segment.h"
#include "services/loader/loader_core.h"
#include "services/loader/loader_device.h"
#include "tests/fixtures/temp_checkpoint.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::loader {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

TEST(LoaderDeviceTest, ParsesCpuAndCudaDevices) {
  auto cpu = ParseLoaderDevice("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_FALSE(cpu->cuda);
  EXPECT_EQ(cpu->ToString(), "cpu");
  auto cuda = ParseLoaderDevice("cuda");
  ASSERT_TRUE(cuda.ok());
  EXPECT_TRUE(cuda->cuda);
  EXPECT_EQ(cuda->ToString(), "cuda:0");
  auto third = ParseLoaderDevice("cuda:3");
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->index, 3);
  EXPECT_EQ(third->ToString(), "cuda:3");
}

TEST(LoaderDeviceTest, RefusesOtherDevicesNamingThem) {
  for (const char* bad : {"", "gpu", "CUDA", "cuda:", "cuda:x", "cuda:-1", "cuda0", "cpu:0", "cuda:1234567"}) {
    auto parsed = ParseLoaderDevice(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr(std::string("'") + bad + "'"));
  }
}

TEST(LoaderDeviceTest, AMissingGpuIsNotUsableAndSaysWhich) {
  EXPECT_TRUE(CheckDeviceUsable(LoaderDevice{}).ok());
  const Status s = CheckDeviceUsable(LoaderDevice{true, 999});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("cuda:999"));
}

class LoaderOnMissingGpuTest : public ::testing::Test {
 protected:
  // The golden checkpoint under a model id of this process only, so that segments of tests
  // running at the same time are not counted.
  void SetUp() override {
    model_ = "gpu-copy-" + std::to_string(::getpid());
    fs::create_directories(root_.File(model_));
    for (const auto& f : fs::directory_iterator(unmask::testing::TestDataPath("tiny-llada")))
      fs::copy_file(f.path(), root_.File(model_ + "/" + f.path().filename().string()));
  }
  std::vector<std::string> ShmEntries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator("/dev/shm")) {
      const std::string name = e.path().filename().string();
      if (name.find(model_) != std::string::npos) names.push_back(name);
    }
    return names;
  }
  unmask::testing::TempDir root_;
  std::string model_;
};

TEST_F(LoaderOnMissingGpuTest, ALoadWhoseGpuCopyFailsFailsAloneAndLeavesNoSegment) {
  LoaderOptions options;
  options.model_roots = {root_.path()};
  options.device = LoaderDevice{true, 999};
  LoaderCore core(options);
  std::vector<std::string> phases;
  auto info = core.Load(model_, "bf16", [&](const weights::LoadProgress& p) {
    phases.push_back(weights::LoadPhaseName(p.phase));
    return true;
  });
  ASSERT_FALSE(info.ok());
  EXPECT_THAT(info.status().message(), HasSubstr(model_));
  EXPECT_THAT(info.status().message(), HasSubstr("cuda:999"));
  EXPECT_THAT(phases, ::testing::Not(::testing::Contains("done")));  // never reported as done
  EXPECT_TRUE(ShmEntries().empty());                                  // the segment was unlinked
  auto listed = core.List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].state, weights::ModelState::kFailed);
  EXPECT_FALSE(core.Attach(model_, "executor-1").ok());
}

TEST_F(LoaderOnMissingGpuTest, OnCpuModelsHaveNoGpuCopy) {
  LoaderOptions options;
  options.model_roots = {root_.path()};
  LoaderCore core(options);
  auto info = core.Load(model_, "int8", {});
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->device, "cpu");
  EXPECT_EQ(info->device_bytes, 0u);
  auto attached = core.Attach(model_, "executor-1");
  ASSERT_TRUE(attached.ok()) << attached.status().ToString();
  EXPECT_EQ(attached->model.device_handle, "");
  EXPECT_FALSE(ShmEntries().empty());
  ASSERT_TRUE(core.Detach(model_, "executor-1").ok());
  ASSERT_TRUE(core.Unload(model_, false).ok());
  EXPECT_TRUE(ShmEntries().empty());
}

}  // namespace
}  // namespace unmask::loader
