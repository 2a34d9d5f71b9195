#include "bench/common/bench_report.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace unmask::bench {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::uint64_t StatusField(const char* key) {
  std::istringstream in(ReadAll("/proc/self/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(std::string(key).size())) * 1024;
  }
  return 0;
}

}  // namespace

std::string MachineDescription() {
  std::string model = "unknown CPU";
  std::istringstream cpu(ReadAll("/proc/cpuinfo"));
  std::string line;
  while (std::getline(cpu, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  const double gib = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE) / (1024.0 * 1024 * 1024);
  struct utsname u {};
  ::uname(&u);
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%s, %ld cores, %.0f GiB RAM, Linux %s", model.c_str(), cores, gib, u.release);
  return buf;
}

std::uint64_t PeakRssBytes() { return StatusField("VmHWM:"); }
std::uint64_t CurrentRssBytes() { return StatusField("VmRSS:"); }

std::string CommandLine(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (i) out += ' ';
    if (a.find_first_of(" \t\"'$") != std::string::npos) {
      out += "'" + a + "'";
    } else {
      out += a;
    }
  }
  return out;
}

bool ReplaceDocSection(const std::string& path, const std::string& id, const std::string& markdown) {
  std::string doc = ReadAll(path);
  const std::string open = "<!-- bench:" + id + " -->";
  const std::string close = "<!-- /bench:" + id + " -->";
  const std::string body = open + "\n" + markdown + (markdown.empty() || markdown.back() == '\n' ? "" : "\n") + close;
  const auto a = doc.find(open);
  const auto b = doc.find(close);
  if (a != std::string::npos && b != std::string::npos && b > a) {
    doc.replace(a, b + close.size() - a, body);
  } else {
    if (!doc.empty() && doc.back() != '\n') doc += '\n';
    doc += "\n" + body + "\n";
  }
  std::ofstream out(path, std::ios::trunc);
  out << doc;
  return static_cast<bool>(out);
}

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double SecondsSince(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

std::string FormatBytes(std::uint64_t bytes) {
  char buf[64];
  if (bytes >= (1ull << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", bytes / double(1ull << 30));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", bytes / double(1ull << 20));
  }
  return buf;
}

}  // namespace unmask::bench
