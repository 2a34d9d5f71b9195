#include "bench/weights/bench_common.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/util/remove_tree.h"
#include "tests/fixtures/temp_checkpoint.h"

namespace unmask::weights::bench {

checkpoint::LladaConfig BenchConfig(std::int64_t d_model, std::int64_t n_layers, std::int64_t mlp, std::int64_t vocab) {
  return unmask::testing::SmallConfig({d_model, n_layers, mlp, vocab, d_model / 128, d_model / 128, 4096});
}

std::string WriteTempCheckpoint(const checkpoint::LladaConfig& config, int shards) {
  const std::string dir = MakeTempDir("unmask-bench-ckpt");
  std::fprintf(stderr, "writing a %s MiB checkpoint to %s ...\n", MiB(config.parameter_count() * 2).c_str(), dir.c_str());
  try {
    unmask::testing::WriteRandomCheckpoint(dir, config, shards);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    RemoveTree(dir);
    std::exit(1);
  }
  return dir;
}

std::string MakeTempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    std::perror("mkdtemp");
    std::exit(1);
  }
  return buf.data();
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  unmask::util::RemoveTree(path);
}

void WarmPageCache(const std::string& dir) {
  std::vector<char> buf(1 << 22);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    int fd = ::open(entry.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    while (::read(fd, buf.data(), buf.size()) > 0) {
    }
    ::close(fd);
  }
}

namespace {
std::uint64_t FieldKb(const char* path, const char* field) {
  std::ifstream in(path);
  std::string line;
  const std::size_t len = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, len, field) == 0) return std::strtoull(line.c_str() + len, nullptr, 10) * 1024;
  }
  return 0;
}
}  // namespace

std::uint64_t ProcStatusBytes(const char* field) { return FieldKb("/proc/self/status", field); }
std::uint64_t SmapsRollupBytes(const char* field) { return FieldKb("/proc/self/smaps_rollup", field); }

Child SpawnSelf(const std::vector<std::string>& args) {
  int in[2], out[2];
  // Close-on-exec, so that later children do not inherit (and keep open) earlier children's pipes.
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
    std::perror("pipe");
    std::exit(1);
  }
  Child c;
  c.pid = ::fork();
  if (c.pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::close(in[0]);
    ::close(in[1]);
    ::close(out[0]);
    ::close(out[1]);
    std::vector<char*> argv;
    std::string self = "/proc/self/exe";
    argv.push_back(self.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv("/proc/self/exe", argv.data());
    std::perror("execv");
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  c.to_child = in[1];
  c.from_child = out[0];
  return c;
}

std::string ReadLine(int fd) {
  std::string line;
  char ch;
  while (::read(fd, &ch, 1) == 1) {
    if (ch == '\n') break;
    line.push_back(ch);
  }
  return line;
}

void WriteLine(int fd, const std::string& line) {
  const std::string text = line + "\n";
  (void)!::write(fd, text.data(), text.size());
}

bool Wait(Child& child) {
  if (child.to_child >= 0) ::close(child.to_child);
  if (child.from_child >= 0) ::close(child.from_child);
  child.to_child = child.from_child = -1;
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string CpuModel() {
  FILE* p = ::popen("lscpu 2>/dev/null", "r");
  std::string model = "unknown";
  if (p == nullptr) return model;
  char line[512];
  while (std::fgets(line, sizeof(line), p)) {
    std::string s = line;
    if (s.rfind("Model name:", 0) == 0) {
      s = s.substr(11);
      s.erase(0, s.find_first_not_of(" \t"));
      s.erase(s.find_last_not_of(" \t\n") + 1);
      model = s;
    }
  }
  ::pclose(p);
  return model + ", " + std::to_string(::sysconf(_SC_NPROCESSORS_ONLN)) + " CPUs online";
}

std::string MiB(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double Seconds(std::int64_t start_ns, std::int64_t end_ns) { return static_cast<double>(end_ns - start_ns) / 1e9; }

void UnlinkSegmentsWithPrefix(const std::string& prefix) {
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(dir)) {
    if (std::string(e->d_name).rfind(prefix, 0) == 0) names.push_back(e->d_name);
  }
  ::closedir(dir);
  for (const auto& n : names) ::shm_unlink(("/" + n).c_str());
}

}  // namespace unmask::weights::bench
