#include "common/model/allocator.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace unmask::model {

namespace {

std::string MiB(std::size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

AllocatorPlan PlanAllocator(const std::function<const char*(const char*)>& env) {
  AllocatorPlan plan;
  const char* unmask = env("UNMASK_MALLOC");
  if (unmask != nullptr && std::strcmp(unmask, "default") == 0) {
    plan.why = "UNMASK_MALLOC=default: glibc's defaults";
    return plan;
  }
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"}) {
    if (env(name) != nullptr) {
      plan.why = std::string(name) + " is set: left as the environment sets it";
      return plan;
    }
  }
  const char* tunables = env("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) {
    plan.why = "GLIBC_TUNABLES sets glibc.malloc: left as the environment sets it";
    return plan;
  }
  plan.tune = true;
  plan.mmap_threshold = kMmapThreshold;
  plan.trim_threshold = kTrimThreshold;
  plan.why = "a step's blocks stay in the heaps instead of going back to the system; UNMASK_MALLOC=default keeps glibc's defaults";
  return plan;
}

std::string ConfigureAllocator() {
  const AllocatorPlan plan = PlanAllocator([](const char* name) { return std::getenv(name); });
  if (!plan.tune) return "glibc malloc as set (" + plan.why + ")";
#if defined(__GLIBC__)
  const bool set = ::mallopt(M_MMAP_THRESHOLD, static_cast<int>(plan.mmap_threshold)) == 1 &&
                   ::mallopt(M_TRIM_THRESHOLD, static_cast<int>(plan.trim_threshold)) == 1;
  if (!set) return "malloc thresholds not set: mallopt refused them (an allocator that is not glibc's?)";
  return "glibc malloc: mmap threshold " + MiB(plan.mmap_threshold) + ", trim threshold " + MiB(plan.trim_threshold) +
         " (" + plan.why + ")";
#else
  return "malloc left as it is (not glibc)";
#endif
}

void ReleaseFreeHeap() {
#if defined(__GLIBC__)
  (void)malloc_trim(0);
#endif
}

}  // namespace unmask::model
