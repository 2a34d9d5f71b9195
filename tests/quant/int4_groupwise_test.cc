#include "common/quant/int4_groupwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

#include "common/quant/convert.h"

namespace unmask::weights {
namespace {

std::vector<float> Normal(std::int64_t n, std::uint32_t seed, float stddev) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

class Int4RoundTripTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(Int4RoundTripTest, ErrorIsAtMostHalfTheGroupScale) {
  const auto [group, symmetric] = GetParam();
  // 300 columns: not a multiple of any group size, so the last group of each row is short.
  const std::int64_t rows = 24, cols = 300;
  std::vector<float> w = Normal(rows * cols, 17 + group, 0.02f);
  for (std::int64_t c = 0; c < cols; ++c) w[2 * cols + c] = std::fabs(w[2 * cols + c]) + 0.5f;  // all positive row
  for (std::int64_t c = 0; c < 40; ++c) w[5 * cols + c] = 0.0f;                                 // zero group(s)
  auto q = QuantizeInt4Groupwise(w.data(), rows, cols, group, symmetric);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  const Int4Layout& L = q->layout;
  ASSERT_EQ(L.groups_per_row(), (cols + group - 1) / group);
  ASSERT_EQ(q->packed.size(), static_cast<std::size_t>(rows * 150));
  ASSERT_EQ(q->zeros.size(), symmetric ? 0u : static_cast<std::size_t>(rows * L.groups_per_row()));
  std::vector<float> back(static_cast<std::size_t>(rows * cols));
  ASSERT_TRUE(DequantizeRows(q->view(), 0, rows, back.data()).ok());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t g = 0; g < L.groups_per_row(); ++g) {
      const std::int64_t c0 = g * group, c1 = std::min<std::int64_t>(cols, c0 + group);
      float lo = 0, hi = 0, amax = 0;
      for (std::int64_t c = c0; c < c1; ++c) {
        lo = std::min(lo, w[r * cols + c]);
        hi = std::max(hi, w[r * cols + c]);
        amax = std::max(amax, std::fabs(w[r * cols + c]));
      }
      const float scale = F16ToF32(q->scales[r * L.groups_per_row() + g]);
      const float ideal = symmetric ? amax / 7 : (hi - lo) / 15;
      ASSERT_GE(scale, ideal) << "scales are rounded up to f16";
      ASSERT_LE(scale, ideal * (1 + 1.0f / 1024) + 1e-7f);
      if (!symmetric) {
        ASSERT_LE(q->zeros[r * L.groups_per_row() + g], 15);
      }
      for (std::int64_t c = c0; c < c1; ++c) {
        const std::size_t i = static_cast<std::size_t>(r * cols + c);
        ASSERT_LE(std::fabs(w[i] - back[i]), scale / 2 * (1 + 1e-5f)) << "row " << r << " col " << c;
        if (w[i] == 0.0f) {
          ASSERT_EQ(back[i], 0.0f) << "zeros stay exactly zero";
        }
        if (symmetric) {
          const int nibble = (q->packed[r * 150 + c / 2] >> (4 * (c % 2))) & 0xf;
          ASSERT_NE(nibble, 8) << "symmetric quantization never produces -8";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllSchemes, Int4RoundTripTest,
                         ::testing::Combine(::testing::Values(32, 64, 128), ::testing::Bool()), [](const auto& info) {
                           return "g" + std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_sym" : "_asym");
                         });

TEST(Int4GroupwiseTest, PackingPutsEvenColumnsInTheLowNibble) {
  // Symmetric, max |w| = 7 -> scale exactly 1: q equals w.
  std::vector<float> w(32, 0.0f);
  w[0] = 7;
  w[1] = -7;
  w[2] = 0;
  w[3] = 1;
  w[4] = -1;
  auto q = QuantizeInt4Groupwise(w.data(), 1, 32, 32, /*symmetric=*/true);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(F16ToF32(q->scales[0]), 1.0f);
  EXPECT_EQ(q->packed[0], 0x97);  // col 0: 7 (low), col 1: -7 = 0b1001 (high)
  EXPECT_EQ(q->packed[1], 0x10);  // col 2: 0, col 3: 1
  EXPECT_EQ(q->packed[2], 0x0f);  // col 4: -1 = 0xf, col 5: 0
  // Asymmetric on [0, 15]: scale 1, zero point 0, q equals w.
  std::vector<float> a(32, 0.0f);
  a[0] = 15;
  a[1] = 3;
  auto qa = QuantizeInt4Groupwise(a.data(), 1, 32, 32, /*symmetric=*/false);
  ASSERT_TRUE(qa.ok());
  EXPECT_EQ(F16ToF32(qa->scales[0]), 1.0f);
  EXPECT_EQ(qa->zeros[0], 0);
  EXPECT_EQ(qa->packed[0], 0x3f);
}

TEST(Int4GroupwiseTest, OddColumnCountLeavesTheLastHighNibbleZero) {
  const std::int64_t rows = 3, cols = 75;
  std::vector<float> w = Normal(rows * cols, 4, 1.0f);
  for (bool symmetric : {true, false}) {
    auto q = QuantizeInt4Groupwise(w.data(), rows, cols, 32, symmetric);
    ASSERT_TRUE(q.ok());
    ASSERT_EQ(q->layout.packed_row_bytes(), 38);
    for (std::int64_t r = 0; r < rows; ++r) EXPECT_EQ(q->packed[r * 38 + 37] >> 4, 0);
    std::vector<float> back(static_cast<std::size_t>(rows * cols));
    ASSERT_TRUE(DequantizeRows(q->view(), 0, rows, back.data()).ok());
    for (std::int64_t r = 0; r < rows; ++r) {
      const float s = F16ToF32(q->scales[r * 3 + 2]);
      EXPECT_LE(std::fabs(back[r * cols + 74] - w[r * cols + 74]), s / 2 * (1 + 1e-5f));
    }
  }
}

TEST(Int4GroupwiseTest, RowRangesChunksAndBf16AgreeWithTheWhole) {
  const std::int64_t rows = 12, cols = 256;
  std::vector<float> w = Normal(rows * cols, 21, 0.1f);
  auto whole = QuantizeInt4Groupwise(w.data(), rows, cols, 64, false);
  ASSERT_TRUE(whole.ok());
  // Quantizing rows [0, 5) and [5, 12) separately gives the same bytes.
  Int4Layout top{5, cols, 64, false}, bottom{7, cols, 64, false};
  std::vector<std::uint8_t> packed(whole->packed.size()), zeros(whole->zeros.size());
  std::vector<std::uint16_t> scales(whole->scales.size());
  ASSERT_TRUE(QuantizeInt4Groupwise(w.data(), top, packed.data(), scales.data(), zeros.data()).ok());
  ASSERT_TRUE(QuantizeInt4Groupwise(w.data() + 5 * cols, bottom, packed.data() + 5 * 128, scales.data() + 5 * 4,
                                    zeros.data() + 5 * 4)
                  .ok());
  EXPECT_EQ(packed, whole->packed);
  EXPECT_EQ(scales, whole->scales);
  EXPECT_EQ(zeros, whole->zeros);

  std::vector<float> full(static_cast<std::size_t>(rows * cols)), part(static_cast<std::size_t>(3 * cols));
  std::vector<std::uint16_t> part16(static_cast<std::size_t>(3 * cols));
  ASSERT_TRUE(DequantizeRows(whole->view(), 0, rows, full.data()).ok());
  ASSERT_TRUE(DequantizeRows(whole->view(), 7, 10, part.data()).ok());
  ASSERT_TRUE(DequantizeRowsBf16(whole->view(), 7, 10, part16.data()).ok());
  for (std::int64_t i = 0; i < 3 * cols; ++i) {
    EXPECT_EQ(part[i], full[7 * cols + i]);
    EXPECT_EQ(part16[i], F32ToBf16(full[7 * cols + i]));
  }
  EXPECT_EQ(DequantizeRows(whole->view(), 0, 13, full.data()).code(), StatusCode::kOutOfRange);
}

TEST(Int4GroupwiseTest, InvalidGroupSizeAndNonFiniteWeightsAreRejected) {
  std::vector<float> w(96, 0.5f);
  auto bad = QuantizeInt4Groupwise(w.data(), 1, 96, 48, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("group size 48"), std::string::npos) << bad.status().message();
  w[70] = std::nanf("");
  auto nan = QuantizeInt4Groupwise(w.data(), 1, 96, 32, false);
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.status().message().find("row 0, column 70"), std::string::npos) << nan.status().message();
  w[70] = 1e30f;  // finite, but its scale overflows f16
  auto huge = QuantizeInt4Groupwise(w.data(), 1, 96, 32, true);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("group 2"), std::string::npos) << huge.status().message();
}

TEST(Int4GroupwiseTest, StorageIsAtMostThreeTenthsOfBf16) {
  for (int group : {32, 64, 128}) {
    for (bool symmetric : {true, false}) {
      Int4Layout L{4096, 4096, group, symmetric};
      const double bytes = static_cast<double>(L.packed_bytes() + L.scale_bytes() + L.zero_bytes());
      EXPECT_LE(bytes / (4096.0 * 4096.0 * 2.0), 0.3) << "g" << group << (symmetric ? " sym" : " asym");
    }
  }
}

}  // namespace
}  // namespace unmask::weights
