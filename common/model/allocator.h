// glibc's malloc, set for a compute loop, in one place (SetUpCompute, compute_setup.h).
//
// Every step of a generation allocates and frees the same few hundred tensors of a few KiB to a
// few MiB. With glibc's defaults the heaps of the intra-op threads (and the main heap until its
// dynamic mmap threshold has risen) give freed memory back to the system past a 128 KiB trim
// threshold, and take it again, zeroed, on the next step: page faults on every step. Measured on
// unmask-kjv (bench_step_batch, 8 generations at once, 2 cores): 213 k page faults and 23 s of
// CPU against 30 k and 19.6 s with the thresholds below, and the batched steps 1.3x faster.
// A fixed mmap threshold of 4 MiB and a trim threshold of 32 MiB keep a step's blocks in the
// heaps; larger blocks (an 8B model's logits) are still mapped and unmapped per use, and a
// tensor of 4 MiB or more made at every call is worth keeping (moe_cpu.cc's expert outputs: 1,024
// page faults a call, half its time, before). Peak RSS under these settings (bench_memory, the
// docs/benchmarks.md "memory" table, measured so since 2026-11-27): 10-20% lower than glibc's
// defaults for the cache modes' small peaks; where the threads' heaps keep freed blocks (long
// prompts in query chunks) 55-60 MiB above freeing at once, inside the executor's reserve.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace unmask::model {

struct AllocatorPlan {
  bool tune = false;  // false: glibc's malloc is left as the environment set it
  std::size_t mmap_threshold = 0, trim_threshold = 0;
  std::string why;
};

inline constexpr std::size_t kMmapThreshold = std::size_t{4} << 20;
inline constexpr std::size_t kTrimThreshold = std::size_t{32} << 20;

// Pure: the plan, given the environment (`env` returns a variable's value or nullptr). The
// thresholds are left alone where the user set glibc's malloc (MALLOC_MMAP_THRESHOLD_,
// MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_, glibc.malloc.* in GLIBC_TUNABLES) or asked for its
// defaults (UNMASK_MALLOC=default).
AllocatorPlan PlanAllocator(const std::function<const char*(const char*)>& env);

// Applies the plan for this process's environment (mallopt) and returns a line for the start-up
// log: what was set, or why nothing was (where mallopt refuses, as under a sanitizer's allocator,
// the line says so).
std::string ConfigureAllocator();

// Gives the heaps' free memory back to the system (malloc_trim): for after a phase whose blocks
// the next one will not reuse (a job's prompt scoring, before its steps), which the trim
// threshold above would otherwise keep and the next phase's peak would stack on.
void ReleaseFreeHeap();

}  // namespace unmask::model
