// The one threading model: the plan for each BLAS build, and what ConfigureThreading sets.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/model/cpu_features.h"
#include "common/model/linear.h"
#include "common/model/small_gemm.h"
#include "common/model/threading.h"

namespace unmask::model {
namespace {

using ::testing::HasSubstr;

// A narrow model on a CPU: one worker per core (each forward then gets one thread from
// PlanThreading); a wide model, a GPU or a single core: one worker.
TEST(PlanWorkersTest, NarrowModelsOnACpuRunAWorkerPerCore) {
  EXPECT_EQ(PlanWorkers(true, 256, 2), 2);                  // unmask-kjv on this machine
  EXPECT_EQ(PlanWorkers(true, kNarrowModelWidth, 16), 16);  // the line itself is narrow
  EXPECT_EQ(PlanWorkers(true, kNarrowModelWidth + 1, 16), 1);
  EXPECT_EQ(PlanWorkers(true, 4096, 2), 1);   // LLaDA-8B: a lone request wants every core
  EXPECT_EQ(PlanWorkers(false, 256, 16), 1);  // a GPU: one batched forward per step
  EXPECT_EQ(PlanWorkers(true, 256, 1), 1);
  EXPECT_EQ(PlanWorkers(true, 256, 0), 1);  // never none
  EXPECT_EQ(PlanWorkers(true, 0, 8), 1);    // a width not known: the safe plan
  // Each of the workers then runs its forward on one thread.
  auto p = PlanThreading(0, 2, BlasThreading::kOpenMP, PlanWorkers(true, 256, 2));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->intra_op_threads, 1);
}

TEST(PlanThreadingTest, PthreadsOpenBlasIsHeldToOneThreadBesideThePool) {
  auto p = PlanThreading(0, 2, BlasThreading::kPthreads);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->intra_op_threads, 2);
  EXPECT_EQ(p->blas_threads, 1);
  EXPECT_THAT(p->why, HasSubstr("held to one thread"));
}

TEST(PlanThreadingTest, OpenMpOpenBlasSharesThePool) {
  auto p = PlanThreading(0, 16, BlasThreading::kOpenMP);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->intra_op_threads, 16);
  EXPECT_EQ(p->blas_threads, 16);
  EXPECT_THAT(p->why, HasSubstr("same OpenMP pool"));
}

TEST(PlanThreadingTest, AnotherBlasIsLeftAloneWithAWarning) {
  auto p = PlanThreading(3, 8, BlasThreading::kUnknown);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->intra_op_threads, 3);
  EXPECT_EQ(p->blas_threads, 0);
  EXPECT_THAT(p->why, HasSubstr("not OpenBLAS"));
}

TEST(PlanThreadingTest, CallersShareTheCoresUnlessAskedOtherwise) {
  EXPECT_EQ(PlanThreading(0, 8, BlasThreading::kPthreads, 2)->intra_op_threads, 4);
  EXPECT_EQ(PlanThreading(0, 2, BlasThreading::kPthreads, 4)->intra_op_threads, 1);
  EXPECT_EQ(PlanThreading(6, 2, BlasThreading::kPthreads, 4)->intra_op_threads, 6);
  EXPECT_EQ(PlanThreading(0, 0, BlasThreading::kOpenMP)->intra_op_threads, 1);
}

TEST(PlanThreadingTest, BadCountsAreRefused) {
  auto neg = PlanThreading(-1, 2, BlasThreading::kPthreads);
  ASSERT_FALSE(neg.ok());
  EXPECT_THAT(neg.status().message(), HasSubstr("intra-op threads must be >= 0 (0: one per core), got -1"));
  auto callers = PlanThreading(0, 2, BlasThreading::kPthreads, 0);
  ASSERT_FALSE(callers.ok());
  EXPECT_THAT(callers.status().message(), HasSubstr("got 0"));
}

TEST(ConfigureThreadingTest, SetsThePoolAndFindsThisProcesssBlas) {
  auto r = ConfigureThreading(1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(at::get_num_threads(), 1);
  EXPECT_FALSE(BlasHeldToOneThread());  // one thread in all: nothing to split
  EXPECT_GE(r->cores, 1);
  EXPECT_LE(r->cores, static_cast<int>(std::thread::hardware_concurrency()));
  // The test machines install OpenBLAS (tools/setup.sh).
  EXPECT_NE(r->blas, BlasThreading::kUnknown) << r->Describe();
  EXPECT_THAT(r->blas_config, HasSubstr("OpenBLAS"));
  EXPECT_THAT(r->Describe(), HasSubstr("1 intra-op threads on "));

  r = ConfigureThreading(2);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(at::get_num_threads(), 2);
  EXPECT_EQ(BlasHeldToOneThread(), r->blas == BlasThreading::kPthreads || r->blas == BlasThreading::kSequential);
  // A thread started afterwards (an executor worker) runs its parallel regions with the plan's count.
  int seen = 0;
  std::thread([&] {
    at::parallel_for(0, 2, 1, [&](std::int64_t, std::int64_t) {});
    seen = at::get_num_threads();
  }).join();
  EXPECT_EQ(seen, 2);
  ASSERT_FALSE(ConfigureThreading(-1).ok());
  (void)ConfigureThreading(0);
}

// engine_tests_pthreads_openblas runs these tests with the pthreads OpenBLAS loaded in place of
// the OpenMP one (LD_LIBRARY_PATH) and says so in UNMASK_EXPECT_BLAS.
TEST(ConfigureThreadingTest, FindsTheBlasTheTestRunnerLoaded) {
  const char* expected = std::getenv("UNMASK_EXPECT_BLAS");
  if (expected == nullptr) GTEST_SKIP() << "UNMASK_EXPECT_BLAS is not set";
  auto r = ConfigureThreading(2);
  ASSERT_TRUE(r.ok());
  const BlasThreading want = std::strcmp(expected, "pthreads") == 0 ? BlasThreading::kPthreads : BlasThreading::kOpenMP;
  EXPECT_EQ(r->blas, want) << r->Describe();
  (void)ConfigureThreading(0);
}

TEST(ConfigureThreadingTest, AHeldBlasStillComputesLargeProductsAcrossThePool) {
  auto r = ConfigureThreading(2);
  ASSERT_TRUE(r.ok());
  if (!BlasHeldToOneThread()) {
    (void)ConfigureThreading(0);
    GTEST_SKIP() << "this process's BLAS (" << BlasThreadingName(r->blas) << ") runs on the pool itself: nothing to split";
  }
  const GemmPath before = ActiveGemmPath();
  ASSERT_TRUE(SetGemmPath(GemmPath::kBlas).ok());
  at::manual_seed(21);
  const at::Tensor w = at::randn({700, 64}), x = at::randn({2, 500, 64});
  const at::Tensor split = Linear(w).Apply(x);
  const at::Tensor whole = at::linear(x, w);  // one BLAS call on one thread
  EXPECT_EQ(split.sizes(), whole.sizes());
  // Within float32 rounding of a 64-term sum (|terms| up to ~10), not bitwise: OpenBLAS's kernels
  // may sum a column differently with a different number of columns (its pthreads build on a Zen 5
  // EPYC: 1.1e-5 apart).
  EXPECT_TRUE(at::allclose(split, whole, 1e-5, 1e-4)) << "max difference " << (split - whole).abs().max().item<float>();
  ASSERT_TRUE(SetGemmPath(before).ok());
  (void)ConfigureThreading(0);
}

// ForEachItem: every item exactly once, spread or not, whatever n.
TEST(ForEachItemTest, RunsEveryItemOnce) {
  at::set_num_threads(2);
  for (const bool spread : {false, true}) {
    for (const std::int64_t n : {0, 1, 2, 7, 100}) {
      std::vector<std::atomic<int>> runs(static_cast<std::size_t>(n));
      ForEachItem(n, spread, [&](std::int64_t i) { runs[static_cast<std::size_t>(i)].fetch_add(1); });
      for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(runs[static_cast<std::size_t>(i)].load(), 1) << "n " << n << " item " << i;
    }
  }
}

// An item that throws: the others still run, and the first error comes back to the caller.
TEST(ForEachItemTest, AnItemsErrorIsRethrownOnceTheOthersHaveRun) {
  at::set_num_threads(2);
  for (const bool spread : {false, true}) {
    std::atomic<int> ran{0};
    EXPECT_THROW(ForEachItem(9, spread,
                             [&](std::int64_t i) {
                               if (i == 2) throw std::runtime_error("item 2");
                               ran.fetch_add(1);
                             }),
                 std::runtime_error);
    EXPECT_EQ(ran.load(), 8) << (spread ? "spread" : "in turn");
  }
}

// Spread items are claimed one at a time: while item 0 holds one thread, the other thread runs
// every other item (a split into halves up front would leave items 1-3 behind item 0 for good;
// here item 0 waits for them, at most 20 s, and says whether they came).
TEST(ForEachItemTest, ASlowItemDoesNotHoldBackTheItemsAfterIt) {
  at::set_num_threads(2);
  std::mutex mu;
  std::set<std::thread::id> threads;
  ForEachItem(64, true, [&](std::int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const std::lock_guard<std::mutex> lock(mu);
    threads.insert(std::this_thread::get_id());
  });
  if (threads.size() < 2) GTEST_SKIP() << "this build runs parallel loops on one thread (no OpenMP)";
  constexpr std::int64_t kItems = 8;
  std::atomic<int> others{0};
  bool saw_them = false;
  ForEachItem(kItems, true, [&](std::int64_t i) {
    if (i != 0) {
      others.fetch_add(1);
      return;
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (others.load() < kItems - 1 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    saw_them = others.load() == kItems - 1;
  });
  EXPECT_TRUE(saw_them);
}

}  // namespace
}  // namespace unmask::model
