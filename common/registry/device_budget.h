// How many bytes a new model may take on this machine (the CPU budget for shm segments), and how
// many the running jobs' heap may take (the executor's job budget). In a container both are also
// capped by the memory cgroup's limit: /proc/meminfo is the host's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/util/status.h"

namespace unmask::weights {

struct MemInfo {
  std::uint64_t mem_total = 0;
  std::uint64_t mem_available = 0;
};

// Parses /proc/meminfo text ("MemAvailable:   123 kB"); InvalidArgument naming a missing field.
StatusOr<MemInfo> ParseMemInfo(const std::string& text);
StatusOr<MemInfo> ReadMemInfo(const std::string& path = "/proc/meminfo");

// What this process's memory cgroup may still take: its limit minus its working set (usage less
// the inactive file cache, as the kubelet counts it). nullopt when there is no limit (no memory
// controller, "max" in v2, v1's near-2^63 "unlimited"). cgroup v2 (memory.max, memory.current,
// memory.stat inactive_file) under cgroup_root plus the path of /proc/self/cgroup's "0::" line,
// else v1 (memory/memory.limit_in_bytes, memory.usage_in_bytes, memory.stat total_inactive_file),
// each also at the root itself (a container's own cgroup is mounted there). InvalidArgument
// naming the file when one does not hold a number.
StatusOr<std::optional<std::uint64_t>> CgroupHeadroom(const std::string& cgroup_root = "/sys/fs/cgroup",
                                                      const std::string& proc_cgroup = "/proc/self/cgroup");

class DeviceBudget {
 public:
  // The CPU budget for segments: MemAvailable, capped by the memory cgroup's headroom and by the
  // free space of the shm file system (segments live there; a container's /dev/shm is often far
  // smaller than its memory). Empty shm_dir / cgroup_root: no such cap.
  static StatusOr<DeviceBudget> ForCpu(const std::string& meminfo_path = "/proc/meminfo",
                                       const std::string& shm_dir = "/dev/shm",
                                       const std::string& cgroup_root = "/sys/fs/cgroup");
  // The budget of the running jobs' heap: MemAvailable capped by the cgroup's headroom, not by
  // /dev/shm (the weights are already there; jobs never allocate in it).
  static StatusOr<DeviceBudget> ForJobs(const std::string& meminfo_path = "/proc/meminfo",
                                        const std::string& cgroup_root = "/sys/fs/cgroup") {
    return ForCpu(meminfo_path, "", cgroup_root);
  }
  explicit DeviceBudget(std::uint64_t available_bytes, std::string source = "")
      : available_(available_bytes), source_(std::move(source)) {}

  std::uint64_t available_bytes() const { return available_; }
  // Where the figure came from, for messages ("MemAvailable" or "/dev/shm free").
  const std::string& source() const { return source_; }
  // ResourceExhausted naming `what`, the bytes needed and the bytes available when
  // bytes + reserve_bytes does not fit.
  Status CheckFits(std::uint64_t bytes, std::uint64_t reserve_bytes, const std::string& what) const;

 private:
  std::uint64_t available_;
  std::string source_;
};

}  // namespace unmask::weights
