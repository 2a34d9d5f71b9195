#include "services/scheduler/dispatch_policy.h"

#include <algorithm>

namespace unmask::scheduler {

StatusOr<DispatchPolicy> ParseDispatchPolicy(const std::string& text) {
  if (text == "least_busy") return DispatchPolicy::kLeastBusy;
  if (text == "round_robin") return DispatchPolicy::kRoundRobin;
  if (text == "random") return DispatchPolicy::kRandom;
  return InvalidArgumentError("dispatch policy '" + text + "' is not one of least_busy, round_robin, random");
}

std::uint64_t FitBudget(const ExecutorSnapshot& e) {
  return e.job_budget_bytes > 0 ? std::min(e.budget_bytes, e.job_budget_bytes) : e.budget_bytes;
}

bool IsCpuDevice(const std::string& device) { return device.empty() || device == "cpu" || device.rfind("cpu:", 0) == 0; }

bool InDeviceClass(const ExecutorSnapshot& e, const std::string& device_class) {
  if (device_class == kDeviceClassCpu) return IsCpuDevice(e.device);
  if (device_class == kDeviceClassAccelerator) return !IsCpuDevice(e.device);
  return true;
}

int Dispatcher::Limit(const ExecutorSnapshot& e) const {
  const int limit = std::max(1, e.max_concurrent);
  return per_executor_limit_ > 0 ? std::min(limit, per_executor_limit_) : limit;
}

bool Dispatcher::HasRoom(const ExecutorSnapshot& e) const { return e.running + e.queued < Limit(e); }

bool Dispatcher::MayClaim(const std::vector<ExecutorSnapshot>& executors, int reserved) const {
  bool any_healthy = false;
  int free = 0;
  for (const auto& e : executors) {
    if (!e.healthy) continue;
    any_healthy = true;
    free += std::max(0, Limit(e) - e.running - e.queued);
  }
  return !any_healthy || free > reserved;
}

int Dispatcher::Pick(const std::vector<ExecutorSnapshot>& executors, const std::string& model,
                     const std::string& device_class) {
  std::vector<int> eligible;
  for (int i = 0; i < static_cast<int>(executors.size()); ++i) {
    const auto& e = executors[i];
    const bool serves = std::find(e.models.begin(), e.models.end(), model) != e.models.end();
    if (e.healthy && serves && InDeviceClass(e, device_class) && HasRoom(e)) eligible.push_back(i);
  }
  if (eligible.empty()) return -1;
  switch (policy_) {
    case DispatchPolicy::kLeastBusy: {
      // Lowest load relative to capacity, in job slots or in job memory, whichever is fuller;
      // ties go to the earliest in the list.
      auto load = [&](int i) {
        const auto& e = executors[i];
        const double slots = static_cast<double>(e.running + e.queued) / std::max(1, e.max_concurrent);
        const double memory = e.job_budget_bytes > 0 ? static_cast<double>(e.job_bytes_in_use) /
                                                           static_cast<double>(e.job_budget_bytes)
                                                     : 0.0;
        return std::max(slots, memory);
      };
      return *std::min_element(eligible.begin(), eligible.end(), [&](int a, int b) { return load(a) < load(b); });
    }
    case DispatchPolicy::kRoundRobin: {
      // The first eligible executor at or after the cursor, so a full one is skipped, not waited on.
      for (std::size_t k = 0; k < executors.size(); ++k) {
        const int i = static_cast<int>((next_ + k) % executors.size());
        if (std::find(eligible.begin(), eligible.end(), i) != eligible.end()) {
          next_ = static_cast<std::size_t>(i) + 1;
          return i;
        }
      }
      return -1;
    }
    case DispatchPolicy::kRandom: {
      std::uniform_int_distribution<std::size_t> pick(0, eligible.size() - 1);
      return eligible[pick(rng_)];
    }
  }
  return -1;
}

}  // namespace unmask::scheduler
