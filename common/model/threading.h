// The engine's one threading model, chosen in one place (ConfigureThreading) by every binary
// that computes: the executor, unmask-engine, unmask-train and the benchmarks.
//
// All parallel work runs on LibTorch's intra-op pool (OpenMP): the few-row kernels, the
// dequantization loops, ATen's element-wise operators. A BLAS with threads of its own beside
// that pool oversubscribes the cores: both sides spin-wait after their work, so each steals the
// other's core (4-6x slower measured on a 2-core EPYC). So:
//   - OpenBLAS built with OpenMP shares the pool: its threads are the pool's threads;
//   - OpenBLAS built with pthreads is held to one thread; products the few-row kernels do not
//     take are split across the pool by Linear instead (BlasHeldToOneThread());
//   - a BLAS that is not OpenBLAS is left alone, with a warning.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/util/status.h"

namespace unmask::model {

enum class BlasThreading { kUnknown, kSequential, kPthreads, kOpenMP };
const char* BlasThreadingName(BlasThreading t);

struct ThreadingPlan {
  int intra_op_threads = 1;
  int blas_threads = 1;  // 0: left as it is (not OpenBLAS)
  std::string why;
};

// Pure: the plan for `requested` threads per forward pass (0: the usable cores shared among
// `callers`, the threads that run forward passes at once, e.g. the executor's workers) on `cores`
// usable cores (affinity and cgroup quota already applied) with this BLAS. InvalidArgument for
// requested < 0 or callers < 1.
StatusOr<ThreadingPlan> PlanThreading(int requested, int cores, BlasThreading blas, int callers = 1);

// How many forward passes a CPU server should run at once (the executor's `--workers 0`): on a
// CPU, a model no wider than kNarrowModelWidth runs one worker per usable core, each forward on
// one thread; anything else (a wider model, a GPU, one core) one worker on all the cores. A narrow
// model's operators are too small to split across threads (unmask-kjv, d_model 256, 2-core Zen 5:
// one generation alone as fast on 1 thread as on 2; in the serving stack 2 workers of 1 thread
// gave 1.1-1.25x the tokens/s of 1 worker of 2, at 1 and at 8 clients), while one worker with a
// pool would leave the second core spinning through the jobs' own serial work. A wide model's
// products do split, and a lone request wants every core. Where the line lies between 512 and
// an 8B model's 4096 is not measured; 512 is the widest measured (issue 26's 2-core EPYC: one
// thread as fast as two).
inline constexpr std::int64_t kNarrowModelWidth = 512;
int PlanWorkers(bool on_cpu, std::int64_t d_model, int cores);

// The cores this process may use: the affinity mask, bounded by a cgroup v2 CPU quota
// (cpu.max, rounded up) where one is set, as in a Kubernetes pod with a CPU limit.
int UsableCores();

struct ThreadingReport {
  ThreadingPlan plan;
  int cores = 1;
  BlasThreading blas = BlasThreading::kUnknown;
  std::string blas_config;  // openblas_get_config(), or "" where not OpenBLAS
  std::string Describe() const;  // one line for the start-up log
};

// Applies the plan for `requested` to this process (LibTorch's intra-op threads, OpenBLAS's
// threads) and returns what it did. Call once at start-up, before the first forward pass.
StatusOr<ThreadingReport> ConfigureThreading(int requested, int callers = 1);
// (OpenMP keeps the thread count per calling thread; ATen applies the process-wide count to each
// thread at its first parallel region, so executor workers started later follow the plan too.)

// True once ConfigureThreading held a pthreads OpenBLAS to one thread while the pool has more:
// Linear then splits large products across the pool itself.
bool BlasHeldToOneThread();

// Runs item(0) ... item(n - 1), independent pieces of work (one generation's attention, one
// generation's step), spread over the intra-op threads when `spread` and n > 1: one thread per
// item at a time, each item's operators on that one thread (ATen runs parallel work nested in a
// parallel region serially), so a batch of small items keeps every core busy instead of waking
// the pool for each tiny operator. Otherwise one after the other on the calling thread. Items run
// under InferenceMode when the caller does (the pool's threads do not inherit it). The first
// exception an item throws is rethrown once all have run; catch inside `item` to keep going.
void ForEachItem(std::int64_t n, bool spread, const std::function<void(std::int64_t)>& item);

}  // namespace unmask::model
