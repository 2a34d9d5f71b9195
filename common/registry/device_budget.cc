#include "common/registry/device_budget.h"

#include <sys/statvfs.h>

#include <fstream>
#include <sstream>

namespace unmask::weights {

StatusOr<MemInfo> ParseMemInfo(const std::string& text) {
  MemInfo info;
  bool have_total = false, have_available = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key, unit;
    std::uint64_t value = 0;
    if (!(fields >> key >> value)) continue;
    fields >> unit;
    const std::uint64_t bytes = unit == "kB" ? value * 1024 : value;
    if (key == "MemTotal:") {
      info.mem_total = bytes;
      have_total = true;
    } else if (key == "MemAvailable:") {
      info.mem_available = bytes;
      have_available = true;
    }
  }
  if (!have_total) return InvalidArgumentError("meminfo: no 'MemTotal' line");
  if (!have_available) return InvalidArgumentError("meminfo: no 'MemAvailable' line (kernel older than 3.14?)");
  return info;
}

StatusOr<MemInfo> ReadMemInfo(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError(path + ": cannot open");
  std::stringstream buf;
  buf << in.rdbuf();
  auto info = ParseMemInfo(buf.str());
  if (!info.ok()) return info.status().WithContext(path);
  return info;
}

StatusOr<DeviceBudget> DeviceBudget::ForCpu(const std::string& meminfo_path, const std::string& shm_dir) {
  UNMASK_ASSIGN_OR_RETURN(MemInfo info, ReadMemInfo(meminfo_path));
  std::uint64_t available = info.mem_available;
  std::string source = "MemAvailable";
  struct statvfs st {};
  if (!shm_dir.empty() && ::statvfs(shm_dir.c_str(), &st) == 0) {
    const std::uint64_t shm_free = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
    if (shm_free < available) {
      available = shm_free;
      source = shm_dir + " free space";
    }
  }
  return DeviceBudget(available, source);
}

Status DeviceBudget::CheckFits(std::uint64_t bytes, std::uint64_t reserve_bytes, const std::string& what) const {
  if (bytes + reserve_bytes <= available_) return OkStatus();
  return ResourceExhaustedError(what + " needs " + std::to_string(bytes) + " bytes (+" + std::to_string(reserve_bytes) +
                                " reserved) but only " + std::to_string(available_) + " bytes are available (" +
                                source_ + ")");
}

}  // namespace unmask::weights
