// How many bytes a new model may take on this machine: the CPU budget for shm segments.
#pragma once

#include <cstdint>
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

class DeviceBudget {
 public:
  // The CPU budget: MemAvailable, capped by the free space of the shm file system (segments
  // live there; a container's /dev/shm is often far smaller than its memory).
  static StatusOr<DeviceBudget> ForCpu(const std::string& meminfo_path = "/proc/meminfo",
                                       const std::string& shm_dir = "/dev/shm");
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
