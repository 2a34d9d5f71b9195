// Shared pieces of the weight-store benchmarks: a random LLaDA-layout checkpoint, /proc
// readings, child processes of the benchmark itself, markdown output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/checkpoint/llada_config.h"
#include "common/util/status.h"

namespace unmask::weights::bench {

// The fixtures' config (tests/fixtures/tiny_config.h) at the benchmarks' size: d_model / 128
// heads and as many KV heads, LLaDA's context; the defaults give about 1 GB of bf16.
checkpoint::LladaConfig BenchConfig(std::int64_t d_model, std::int64_t n_layers, std::int64_t mlp, std::int64_t vocab);

// A fresh temp directory holding the fixtures' random bf16 checkpoint of `config` in `shards`
// shards (tests/fixtures/temp_checkpoint.h); exits when it cannot be written.
std::string WriteTempCheckpoint(const checkpoint::LladaConfig& config, int shards);

// A fresh temp directory; RemoveTree removes it with its contents.
std::string MakeTempDir(const std::string& prefix);
void RemoveTree(const std::string& path);

// Reads every file of `dir` once so that all measured runs start from a warm page cache.
void WarmPageCache(const std::string& dir);

// "VmHWM:", "VmRSS:" from /proc/self/status; "Rss:", "Pss:", ... from /proc/self/smaps_rollup.
std::uint64_t ProcStatusBytes(const char* field);
std::uint64_t SmapsRollupBytes(const char* field);

// Running this benchmark binary again with other arguments, stdout piped back.
struct Child {
  int pid = -1;
  int to_child = -1;    // the child's stdin
  int from_child = -1;  // the child's stdout
};
Child SpawnSelf(const std::vector<std::string>& args);
// Reads one line from the child's stdout ("" at EOF).
std::string ReadLine(int fd);
void WriteLine(int fd, const std::string& line);
// Waits for the child; true when it exited with status 0.
bool Wait(Child& child);

std::string CpuModel();  // lscpu's "Model name"
std::string MiB(std::uint64_t bytes);
double Seconds(std::int64_t start_ns, std::int64_t end_ns);
std::int64_t NowNs();
// /dev/shm entries "unmask-bench-*" of this run, for the final cleanup.
void UnlinkSegmentsWithPrefix(const std::string& prefix);

}  // namespace unmask::weights::bench
