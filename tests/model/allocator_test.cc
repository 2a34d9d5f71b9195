// glibc's malloc thresholds (common/model/allocator.h): the plan from the environment, and what
// ConfigureAllocator reports having set.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "common/model/allocator.h"

namespace unmask::model {
namespace {

using ::testing::HasSubstr;

// An environment of these variables only.
std::function<const char*(const char*)> Env(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(PlanAllocatorTest, SetsBothThresholdsByDefault) {
  const AllocatorPlan p = PlanAllocator(Env({{"PATH", "/usr/bin"}, {"GLIBC_TUNABLES", "glibc.pthread.rseq=0"}}));
  EXPECT_TRUE(p.tune);
  EXPECT_EQ(p.mmap_threshold, std::size_t{4} << 20);
  EXPECT_EQ(p.trim_threshold, std::size_t{32} << 20);
  EXPECT_THAT(p.why, HasSubstr("UNMASK_MALLOC=default"));  // says how to turn it off
}

TEST(PlanAllocatorTest, LeavesMallocAloneWhereTheUserSetsIt) {
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"}) {
    const AllocatorPlan p = PlanAllocator(Env({{name, "1048576"}}));
    EXPECT_FALSE(p.tune) << name;
    EXPECT_THAT(p.why, HasSubstr(name));
  }
  AllocatorPlan p = PlanAllocator(Env({{"GLIBC_TUNABLES", "glibc.pthread.rseq=0:glibc.malloc.trim_threshold=0"}}));
  EXPECT_FALSE(p.tune);
  EXPECT_THAT(p.why, HasSubstr("GLIBC_TUNABLES"));
  p = PlanAllocator(Env({{"UNMASK_MALLOC", "default"}}));
  EXPECT_FALSE(p.tune);
  EXPECT_THAT(p.why, HasSubstr("glibc's defaults"));
  // Any other value of UNMASK_MALLOC keeps unmask's thresholds.
  EXPECT_TRUE(PlanAllocator(Env({{"UNMASK_MALLOC", "tuned"}})).tune);
}

TEST(ConfigureAllocatorTest, SaysWhatItSet) {
  const std::string line = ConfigureAllocator();
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  if (std::getenv("UNMASK_MALLOC") == nullptr && std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr &&
      std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr && std::getenv("MALLOC_TOP_PAD_") == nullptr &&
      std::getenv("GLIBC_TUNABLES") == nullptr) {
    EXPECT_EQ(line.rfind("glibc malloc: mmap threshold 4 MiB, trim threshold 32 MiB (", 0), 0u) << line;
    return;
  }
#endif
  EXPECT_FALSE(line.empty());
}

}  // namespace
}  // namespace unmask::model
