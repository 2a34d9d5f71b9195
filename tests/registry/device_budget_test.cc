#include "common/registry/device_budget.h"

#include <gtest/gtest.h>

#include "tests/fixtures/weight_checkpoints.h"

namespace unmask::weights {
namespace {

TEST(DeviceBudgetTest, ParsesMemInfo) {
  const std::string text =
      "MemTotal:       24576000 kB\n"
      "MemFree:         1000000 kB\n"
      "MemAvailable:   20000000 kB\n"
      "Buffers:            1234 kB\n"
      "HugePages_Total:       0\n";
  auto info = ParseMemInfo(text);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->mem_total, 24576000ull * 1024);
  EXPECT_EQ(info->mem_available, 20000000ull * 1024);
  auto old_kernel = ParseMemInfo("MemTotal: 100 kB\nMemFree: 50 kB\n");
  ASSERT_FALSE(old_kernel.ok());
  EXPECT_NE(old_kernel.status().message().find("MemAvailable"), std::string::npos);
}

TEST(DeviceBudgetTest, ReadsThisMachine) {
  auto budget = DeviceBudget::ForCpu();
  ASSERT_TRUE(budget.ok()) << budget.status().ToString();
  EXPECT_GT(budget->available_bytes(), 0u);
  auto info = ReadMemInfo();
  ASSERT_TRUE(info.ok());
  EXPECT_LE(budget->available_bytes(), info->mem_total);
}

TEST(DeviceBudgetTest, UsesTheGivenFileAndCapsByShmSpace) {
  testing::TempDir dir;
  testing::WriteFile(dir.Join("meminfo"), "MemTotal: 1000 kB\nMemAvailable: 600 kB\n");
  auto budget = DeviceBudget::ForCpu(dir.Join("meminfo"), "");
  ASSERT_TRUE(budget.ok());
  EXPECT_EQ(budget->available_bytes(), 600u * 1024);
  EXPECT_EQ(budget->source(), "MemAvailable");
  EXPECT_EQ(DeviceBudget::ForCpu(dir.Join("missing"), "").status().code(), StatusCode::kNotFound);
}

TEST(DeviceBudgetTest, CheckFitsExplainsTheShortfall) {
  DeviceBudget budget(1000, "MemAvailable");
  EXPECT_TRUE(budget.CheckFits(900, 100, "model 'm'").ok());
  Status s = budget.CheckFits(901, 100, "model 'm' (int4)");
  ASSERT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("model 'm' (int4) needs 901 bytes"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("only 1000 bytes"), std::string::npos);
  EXPECT_NE(s.message().find("MemAvailable"), std::string::npos);
}

}  // namespace
}  // namespace unmask::weights
