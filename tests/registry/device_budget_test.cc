#include "common/registry/device_budget.h"

#include <gtest/gtest.h>

#include <filesystem>

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

// Writes a file, making its directories.
void Put(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  testing::WriteFile(path, text);
}

// A cgroup tree under dir: v2 files at the root (a container's own cgroup) or v1 under memory/.
void WriteCgroup(const testing::TempDir& dir, bool v2, const std::string& limit, const std::string& usage,
                 const std::string& stat) {
  const std::string base = v2 ? dir.Join("") : dir.Join("memory/");
  Put(base + (v2 ? "memory.max" : "memory.limit_in_bytes"), limit);
  Put(base + (v2 ? "memory.current" : "memory.usage_in_bytes"), usage);
  Put(base + "memory.stat", stat);
}

TEST(DeviceBudgetTest, CgroupHeadroomIsTheLimitLessTheWorkingSet) {
  testing::TempDir v2, v1;
  // v2: 1000 MiB limit, 300 MiB used of which 100 MiB inactive file cache -> 800 MiB left.
  WriteCgroup(v2, true, "1048576000\n", "314572800\n", "anon 1\ninactive_file 104857600\nactive_file 5\n");
  auto h = CgroupHeadroom(v2.Join(""), "/nonexistent");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_TRUE(h->has_value());
  EXPECT_EQ(**h, 800ull << 20);
  // v1, its own key for the cache.
  WriteCgroup(v1, false, "2097152\n", "1048576\n", "cache 9\ntotal_inactive_file 524288\n");
  h = CgroupHeadroom(v1.Join(""), "/nonexistent");
  ASSERT_TRUE(h.ok() && h->has_value()) << h.status().ToString();
  EXPECT_EQ(**h, 2097152u - (1048576u - 524288u));
  // Over the limit (the kernel is reclaiming): nothing left, not a wrapped-around figure.
  WriteCgroup(v2, true, "1000\n", "5000\n", "");
  h = CgroupHeadroom(v2.Join(""), "/nonexistent");
  ASSERT_TRUE(h.ok() && h->has_value());
  EXPECT_EQ(**h, 0u);
}

TEST(DeviceBudgetTest, NoCgroupLimitIsNoCap) {
  testing::TempDir none, v2, v1;
  auto h = CgroupHeadroom(none.Join(""), "/nonexistent");  // no memory controller files at all
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(h->has_value());
  WriteCgroup(v2, true, "max\n", "123\n", "");
  h = CgroupHeadroom(v2.Join(""), "/nonexistent");
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(h->has_value());
  WriteCgroup(v1, false, "9223372036854771712\n", "123\n", "");  // v1's "unlimited"
  h = CgroupHeadroom(v1.Join(""), "/nonexistent");
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(h->has_value());
}

TEST(DeviceBudgetTest, CgroupOfThisProcessIsFoundUnderItsPath) {
  testing::TempDir dir;
  // /proc/self/cgroup names the path under the v2 root; the root's own files are not this one's.
  testing::WriteFile(dir.Join("proc-cgroup"), "0::/kubepods/pod1/c1\n");
  WriteCgroup(dir, true, "max\n", "1\n", "");
  Put(dir.Join("kubepods/pod1/c1/memory.max"), "4096\n");
  Put(dir.Join("kubepods/pod1/c1/memory.current"), "1024\n");
  auto h = CgroupHeadroom(dir.Join(""), dir.Join("proc-cgroup"));
  ASSERT_TRUE(h.ok() && h->has_value()) << h.status().ToString();
  EXPECT_EQ(**h, 3072u);
  // v1: "N:memory:/path" (memory among other controllers).
  testing::TempDir v1;
  testing::WriteFile(v1.Join("proc-cgroup"), "12:pids:/x\n7:cpu,memory:/docker/abc\n");
  Put(v1.Join("memory/docker/abc/memory.limit_in_bytes"), "8192\n");
  Put(v1.Join("memory/docker/abc/memory.usage_in_bytes"), "192\n");
  h = CgroupHeadroom(v1.Join(""), v1.Join("proc-cgroup"));
  ASSERT_TRUE(h.ok() && h->has_value()) << h.status().ToString();
  EXPECT_EQ(**h, 8000u);
}

TEST(DeviceBudgetTest, BadCgroupFilesAreNamed) {
  testing::TempDir dir;
  WriteCgroup(dir, true, "lots\n", "1\n", "");
  auto h = CgroupHeadroom(dir.Join(""), "/nonexistent");
  ASSERT_EQ(h.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(h.status().message().find("memory.max"), std::string::npos) << h.status().message();
  EXPECT_NE(h.status().message().find("lots"), std::string::npos);
  WriteCgroup(dir, true, "100\n", "-5\n", "");
  h = CgroupHeadroom(dir.Join(""), "/nonexistent");
  ASSERT_EQ(h.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(h.status().message().find("memory.current"), std::string::npos) << h.status().message();
  WriteCgroup(dir, true, "100\n", "5\n", "inactive_file 99999999999999999999999\n");
  h = CgroupHeadroom(dir.Join(""), "/nonexistent");
  ASSERT_EQ(h.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(h.status().message().find("memory.stat"), std::string::npos) << h.status().message();
  // ForCpu passes the error on instead of guessing.
  testing::WriteFile(dir.Join("meminfo"), "MemTotal: 1000 kB\nMemAvailable: 600 kB\n");
  EXPECT_EQ(DeviceBudget::ForCpu(dir.Join("meminfo"), "", dir.Join("")).status().code(), StatusCode::kInvalidArgument);
}

TEST(DeviceBudgetTest, TheCgroupCapsBothBudgetsAndShmOnlyTheSegments) {
  testing::TempDir dir, shm;
  testing::WriteFile(dir.Join("meminfo"), "MemTotal: 100000 kB\nMemAvailable: 60000 kB\n");
  WriteCgroup(dir, true, std::to_string(40000ull * 1024) + "\n", "0\n", "");
  auto segments = DeviceBudget::ForCpu(dir.Join("meminfo"), "", dir.Join(""));
  ASSERT_TRUE(segments.ok()) << segments.status().ToString();
  EXPECT_EQ(segments->available_bytes(), 40000ull * 1024);
  EXPECT_NE(segments->source().find("cgroup"), std::string::npos) << segments->source();
  auto jobs = DeviceBudget::ForJobs(dir.Join("meminfo"), dir.Join(""));
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->available_bytes(), 40000ull * 1024);
  // A full /dev/shm (the weights fill it) caps the segments' budget, never the jobs'.
  auto with_shm = DeviceBudget::ForCpu(dir.Join("meminfo"), "/dev/shm", dir.Join(""));
  ASSERT_TRUE(with_shm.ok());
  EXPECT_LE(with_shm->available_bytes(), 40000ull * 1024);
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
