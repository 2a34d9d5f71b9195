#include "common/quant/pruning.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace unmask::weights {
namespace {

std::vector<float> Normal(std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) {
    do x = dist(rng);
    while (x == 0.0f);
  }
  return v;
}

TEST(PruningTest, PrunesExactlyTheRatioOfSmallestMagnitudes) {
  const std::int64_t n = 10007;
  const std::vector<float> original = Normal(n, 5);
  for (double ratio : {0.0, 0.1, 0.25, 0.5, 0.9, 0.999, 1.0}) {
    std::vector<float> w = original;
    auto zeroed = PruneByMagnitude(w.data(), n, ratio);
    ASSERT_TRUE(zeroed.ok()) << zeroed.status().ToString();
    const auto k = static_cast<std::int64_t>(std::floor(ratio * n));
    EXPECT_EQ(*zeroed, k) << ratio;
    std::int64_t zeros = 0;
    float largest_pruned = 0.0f, smallest_kept = INFINITY;
    for (std::int64_t i = 0; i < n; ++i) {
      if (w[i] == 0.0f) {
        ++zeros;
        largest_pruned = std::max(largest_pruned, std::fabs(original[i]));
      } else {
        EXPECT_EQ(w[i], original[i]) << "kept values are untouched";
        smallest_kept = std::min(smallest_kept, std::fabs(original[i]));
      }
    }
    EXPECT_EQ(zeros, k) << ratio;
    if (k > 0 && k < n) {
      EXPECT_LE(largest_pruned, smallest_kept) << ratio;
    }
  }
}

TEST(PruningTest, TiesAreBrokenByLowestIndexFirst) {
  std::vector<float> w = {3, 1, -1, 2, 1, -1};
  auto zeroed = PruneByMagnitude(w.data(), 6, 0.5);  // k = 3 of the four |w| == 1
  ASSERT_TRUE(zeroed.ok());
  EXPECT_EQ(w, (std::vector<float>{3, 0, 0, 2, 0, -1}));

  std::vector<float> same(10);
  for (int i = 0; i < 10; ++i) same[i] = (i % 2) ? -0.5f : 0.5f;
  ASSERT_TRUE(PruneByMagnitude(same.data(), 10, 0.35).ok());  // k = 3
  for (int i = 0; i < 10; ++i) EXPECT_EQ(same[i] == 0.0f, i < 3) << i;
  // -0 and +0 are the same magnitude.
  std::vector<float> zeros = {-0.0f, 0.0f, 1.0f, -0.0f};
  ASSERT_TRUE(PruneByMagnitude(zeros.data(), 4, 0.5).ok());
  EXPECT_FALSE(std::signbit(zeros[0]));  // pruned: rewritten as +0
  EXPECT_FALSE(std::signbit(zeros[1]));
  EXPECT_TRUE(std::signbit(zeros[3]));  // not pruned: untouched
}

TEST(PruningTest, StreamedPlanWithSmallChunksMatchesInMemoryPruning) {
  const std::int64_t n = 5000;
  std::vector<float> w = Normal(n, 9);
  for (int i = 0; i < 400; ++i) w[static_cast<std::size_t>(i * 11)] = 0.25f;  // many ties at one magnitude
  std::vector<float> expected = w;
  // Ratio chosen so that the threshold lands inside the block of ties: the three-pass path.
  std::int64_t below = 0;
  for (float v : w) below += std::fabs(v) < 0.25f;
  const double ratio = (static_cast<double>(below) + 150.5) / n;
  ASSERT_TRUE(PruneByMagnitude(expected.data(), n, ratio).ok());

  std::vector<float> scratch(7);
  int reads = 0;
  F32ChunkReader read = [&](std::int64_t begin, std::int64_t count, float* dst) {
    ++reads;
    std::memcpy(dst, w.data() + begin, static_cast<std::size_t>(count) * sizeof(float));
    return OkStatus();
  };
  auto plan = PlanMagnitudePruning(n, ratio, read, scratch.data(), 7);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->threshold(), 0.25f);
  EXPECT_GE(plan->last_tie_index, 0);
  EXPECT_LT(plan->last_tie_index, n - 1);
  std::int64_t zeroed = 0;
  for (std::int64_t begin = 0; begin < n; begin += 333) {
    const std::int64_t count = std::min<std::int64_t>(333, n - begin);
    zeroed += ApplyPrunePlan(*plan, begin, w.data() + begin, count);
  }
  EXPECT_EQ(zeroed, plan->pruned);
  EXPECT_EQ(w, expected);
}

TEST(PruningTest, ReaderErrorsPropagate) {
  std::vector<float> scratch(4);
  F32ChunkReader failing = [](std::int64_t, std::int64_t, float*) { return DataLossError("shard went away"); };
  auto plan = PlanMagnitudePruning(10, 0.5, failing, scratch.data(), 4);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(), "shard went away");
}

TEST(PruningTest, RatiosOutsideZeroToOneAreRejected) {
  std::vector<float> w(4, 1.0f);
  for (double bad : {-0.1, 1.5, static_cast<double>(NAN)}) {
    auto r = PruneByMagnitude(w.data(), 4, bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace unmask::weights
