#include "common/model/threading.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <fstream>
#include <mutex>
#include <thread>

namespace unmask::model {
namespace {

std::atomic<bool> g_blas_held{false};

// OpenBLAS's control functions, looked up at run time: LibTorch reaches the BLAS through the
// system's libblas.so.3, which may be OpenBLAS (either build) or another implementation.
struct OpenBlasApi {
  int (*get_parallel)() = nullptr;           // 0 sequential, 1 pthreads, 2 OpenMP
  void (*set_num_threads)(int) = nullptr;
  char* (*get_config)() = nullptr;
};

OpenBlasApi FindOpenBlas() {
  OpenBlasApi api;
  api.get_parallel = reinterpret_cast<int (*)()>(::dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
  api.set_num_threads = reinterpret_cast<void (*)(int)>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  api.get_config = reinterpret_cast<char* (*)()>(::dlsym(RTLD_DEFAULT, "openblas_get_config"));
  return api;
}

BlasThreading ThreadingOf(const OpenBlasApi& api) {
  if (api.get_parallel == nullptr || api.set_num_threads == nullptr) return BlasThreading::kUnknown;
  switch (api.get_parallel()) {
    case 0: return BlasThreading::kSequential;
    case 1: return BlasThreading::kPthreads;
    case 2: return BlasThreading::kOpenMP;
    default: return BlasThreading::kUnknown;
  }
}

// ceil(quota / period) from cgroup v2's cpu.max ("max 100000" when unlimited), or 0.
int CgroupCpuLimit() {
  std::ifstream in("/sys/fs/cgroup/cpu.max");
  std::string quota;
  long long period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
  try {
    const long long q = std::stoll(quota);
    return q > 0 ? static_cast<int>((q + period - 1) / period) : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

const char* BlasThreadingName(BlasThreading t) {
  switch (t) {
    case BlasThreading::kSequential: return "OpenBLAS (sequential)";
    case BlasThreading::kPthreads: return "OpenBLAS (pthreads)";
    case BlasThreading::kOpenMP: return "OpenBLAS (OpenMP)";
    case BlasThreading::kUnknown: break;
  }
  return "a BLAS that is not OpenBLAS";
}

int PlanWorkers(bool on_cpu, std::int64_t d_model, int cores) {
  return on_cpu && d_model > 0 && d_model <= kNarrowModelWidth ? std::max(1, cores) : 1;
}

StatusOr<ThreadingPlan> PlanThreading(int requested, int cores, BlasThreading blas, int callers) {
  if (requested < 0)
    return InvalidArgumentError("intra-op threads must be >= 0 (0: one per core), got " + std::to_string(requested));
  if (callers < 1) return InvalidArgumentError("threads running forward passes must be >= 1, got " + std::to_string(callers));
  ThreadingPlan p;
  p.intra_op_threads = requested > 0 ? requested : std::max(1, cores / callers);
  const std::string n = std::to_string(p.intra_op_threads);
  switch (blas) {
    case BlasThreading::kOpenMP:
      p.blas_threads = p.intra_op_threads;
      p.why = "OpenBLAS runs on the same OpenMP pool of " + n + " threads";
      break;
    case BlasThreading::kPthreads:
      p.blas_threads = 1;
      p.why = p.intra_op_threads == 1 ? "one thread in all"
                                      : "OpenBLAS's own pthreads would spin beside the OpenMP pool: held to one thread, "
                                        "large products are split across the pool of " + n + " instead";
      break;
    case BlasThreading::kSequential:
      p.blas_threads = 1;
      p.why = "sequential OpenBLAS: large products are split across the pool of " + n;
      break;
    case BlasThreading::kUnknown:
      p.blas_threads = 0;
      p.why = "the BLAS is not OpenBLAS: its threads are left as they are and may oversubscribe the cores; "
              "install libopenblas0-openmp";
      break;
  }
  return p;
}

int UsableCores() {
  int cores = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
  if (cores <= 0) cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int limit = CgroupCpuLimit();
  return limit > 0 ? std::min(cores, limit) : cores;
}

std::string ThreadingReport::Describe() const {
  std::string out = std::to_string(plan.intra_op_threads) + " intra-op threads on " + std::to_string(cores) +
                    " usable cores; BLAS: " + BlasThreadingName(blas);
  if (plan.blas_threads > 0) out += ", " + std::to_string(plan.blas_threads) + " thread(s)";
  return out + " (" + plan.why + ")";
}

StatusOr<ThreadingReport> ConfigureThreading(int requested, int callers) {
  const OpenBlasApi api = FindOpenBlas();
  ThreadingReport r;
  r.cores = UsableCores();
  r.blas = ThreadingOf(api);
  UNMASK_ASSIGN_OR_RETURN(r.plan, PlanThreading(requested, r.cores, r.blas, callers));
  if (api.get_config != nullptr) r.blas_config = api.get_config();
  at::set_num_threads(r.plan.intra_op_threads);
  if (r.plan.blas_threads > 0 && api.set_num_threads != nullptr) api.set_num_threads(r.plan.blas_threads);
  g_blas_held.store(r.blas != BlasThreading::kOpenMP && r.blas != BlasThreading::kUnknown && r.plan.intra_op_threads > 1,
                    std::memory_order_relaxed);
  return r;
}

bool BlasHeldToOneThread() { return g_blas_held.load(std::memory_order_relaxed); }

void ForEachItem(std::int64_t n, bool spread, const std::function<void(std::int64_t)>& item) {
  std::mutex mu;
  std::exception_ptr first_error;
  auto run = [&](std::int64_t i) {
    try {
      item(i);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mu);
      if (!first_error) first_error = std::current_exception();
    }
  };
  if (!spread || n < 2 || at::get_num_threads() < 2 || at::in_parallel_region()) {
    for (std::int64_t i = 0; i < n; ++i) run(i);
  } else {
    // Items are claimed one at a time, not split in halves up front: a batch's generations
    // differ in length (an item can cost several times another), and a fixed split can leave one
    // core waiting. (bench_step_batch showed no difference either way on a noisy 2-core host.)
    const bool inference = c10::InferenceMode::is_enabled();
    std::atomic<std::int64_t> next{0};
    at::parallel_for(0, std::min<std::int64_t>(n, at::get_num_threads()), 1, [&](std::int64_t, std::int64_t) {
      c10::InferenceMode guard(inference);
      for (std::int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) run(i);
    });
  }
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace unmask::model
