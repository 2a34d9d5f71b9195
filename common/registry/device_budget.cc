#include "common/registry/device_budget.h"

#include <sys/statvfs.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace unmask::weights {
namespace {

// A cgroup v1 limit at or above this is "no limit" (the kernel writes PAGE_COUNTER_MAX pages).
constexpr std::uint64_t kV1Unlimited = std::uint64_t{1} << 62;

bool ReadText(const std::string& path, std::string* text) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream buf;
  buf << in.rdbuf();
  *text = buf.str();
  return true;
}

// The number a cgroup file holds (trailing newline allowed); "max" -> nullopt.
StatusOr<std::optional<std::uint64_t>> CgroupNumber(const std::string& path, const std::string& text) {
  std::string v = text;
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
  if (v == "max") return std::optional<std::uint64_t>();
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 20)
    return InvalidArgumentError(path + ": expected a number of bytes or 'max', got '" + v.substr(0, 40) + "'");
  try {
    return std::optional<std::uint64_t>(std::stoull(v));
  } catch (const std::exception&) {
    return InvalidArgumentError(path + ": '" + v + "' is out of range");
  }
}

// A key's value in memory.stat ("inactive_file 123"), 0 when absent.
StatusOr<std::uint64_t> StatValue(const std::string& path, const std::string& key) {
  std::string text;
  if (!ReadText(path, &text)) return std::uint64_t{0};
  std::istringstream in(text);
  std::string k, v;
  while (in >> k >> v) {
    if (k != key) continue;
    UNMASK_ASSIGN_OR_RETURN(auto n, CgroupNumber(path, v));
    return n.value_or(0);
  }
  return std::uint64_t{0};
}

// The cgroup path of a controller in /proc/self/cgroup ("0::/a/b" for v2, "N:memory:/a/b" for v1).
std::string CgroupPath(const std::string& proc_cgroup, bool v2) {
  std::string text;
  if (!ReadText(proc_cgroup, &text)) return "";
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = line.find(':', a == std::string::npos ? a : a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    const bool match = v2 ? (id == "0" && controllers.empty())
                          : ("," + controllers + ",").find(",memory,") != std::string::npos;
    if (match) return line.substr(b + 1);
  }
  return "";
}

}  // namespace

StatusOr<std::optional<std::uint64_t>> CgroupHeadroom(const std::string& cgroup_root, const std::string& proc_cgroup) {
  struct Layout {
    bool v2;
    std::string dir, limit, usage, inactive;
  };
  std::vector<Layout> layouts;
  for (bool v2 : {true, false}) {
    const std::string base = v2 ? cgroup_root : cgroup_root + "/memory";
    const std::string path = CgroupPath(proc_cgroup, v2);
    std::vector<std::string> dirs;
    if (!path.empty() && path != "/") dirs.push_back(base + path);
    dirs.push_back(base);
    for (const auto& d : dirs) {
      layouts.push_back(v2 ? Layout{true, d, "memory.max", "memory.current", "inactive_file"}
                           : Layout{false, d, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"});
    }
  }
  for (const auto& l : layouts) {
    std::string text;
    const std::string limit_path = l.dir + "/" + l.limit;
    if (!ReadText(limit_path, &text)) continue;
    UNMASK_ASSIGN_OR_RETURN(auto limit, CgroupNumber(limit_path, text));
    if (!limit || (!l.v2 && *limit >= kV1Unlimited)) return std::optional<std::uint64_t>();
    const std::string usage_path = l.dir + "/" + l.usage;
    if (!ReadText(usage_path, &text)) return InvalidArgumentError(usage_path + ": cannot read (the limit is in " + limit_path + ")");
    UNMASK_ASSIGN_OR_RETURN(auto usage, CgroupNumber(usage_path, text));
    UNMASK_ASSIGN_OR_RETURN(std::uint64_t inactive, StatValue(l.dir + "/memory.stat", l.inactive));
    const std::uint64_t used = usage.value_or(0);
    const std::uint64_t working_set = used > inactive ? used - inactive : 0;
    return std::optional<std::uint64_t>(*limit > working_set ? *limit - working_set : 0);
  }
  return std::optional<std::uint64_t>();
}

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

StatusOr<DeviceBudget> DeviceBudget::ForCpu(const std::string& meminfo_path, const std::string& shm_dir,
                                             const std::string& cgroup_root) {
  UNMASK_ASSIGN_OR_RETURN(MemInfo info, ReadMemInfo(meminfo_path));
  std::uint64_t available = info.mem_available;
  std::string source = "MemAvailable";
  if (!cgroup_root.empty()) {
    UNMASK_ASSIGN_OR_RETURN(auto headroom, CgroupHeadroom(cgroup_root));
    if (headroom && *headroom < available) {
      available = *headroom;
      source = "the memory cgroup's limit less its working set";
    }
  }
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
