#include "common/quant/int8_per_channel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

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

TEST(Int8PerChannelTest, RoundTripErrorIsAtMostHalfTheRowScale) {
  const std::int64_t rows = 37, cols = 259;
  std::vector<float> w = Normal(rows * cols, 42, 0.05f);
  // Rows of very different magnitude: each row must get its own scale.
  for (std::int64_t c = 0; c < cols; ++c) w[3 * cols + c] *= 1000.0f;
  for (std::int64_t c = 0; c < cols; ++c) w[4 * cols + c] *= 1e-4f;
  auto q = QuantizeInt8PerChannel(w.data(), rows, cols);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  std::vector<float> back(static_cast<std::size_t>(rows * cols));
  ASSERT_TRUE(DequantizeRows(q->view(), 0, rows, back.data()).ok());
  for (std::int64_t r = 0; r < rows; ++r) {
    float amax = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(w[r * cols + c]));
    const float scale = q->scales[r];
    EXPECT_FLOAT_EQ(scale, amax / 127.0f) << "row " << r;
    bool hit_extreme = false;
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r * cols + c);
      ASSERT_LE(std::fabs(w[i] - back[i]), scale / 2 * (1 + 1e-5f)) << "row " << r << " col " << c;
      ASSERT_GE(q->q[i], -127);
      hit_extreme |= std::abs(q->q[i]) == 127;
    }
    EXPECT_TRUE(hit_extreme) << "the row maximum maps to +-127 in row " << r;
  }
}

TEST(Int8PerChannelTest, AllZeroRowHasZeroScaleAndZeroValues) {
  std::vector<float> w = {0, 0, 0, 0, 1, -2, 3, 4};
  auto q = QuantizeInt8PerChannel(w.data(), 2, 4);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->scales[0], 0.0f);
  std::vector<float> back(8);
  ASSERT_TRUE(DequantizeRows(q->view(), 0, 2, back.data()).ok());
  for (int c = 0; c < 4; ++c) EXPECT_EQ(back[c], 0.0f);
  EXPECT_EQ(q->q[7], 127);
  EXPECT_FLOAT_EQ(back[7], 4.0f);
}

TEST(Int8PerChannelTest, RowRangesAndBf16MatchTheFullDequantization) {
  const std::int64_t rows = 16, cols = 96;
  std::vector<float> w = Normal(rows * cols, 3, 1.0f);
  auto q = QuantizeInt8PerChannel(w.data(), rows, cols);
  ASSERT_TRUE(q.ok());
  std::vector<float> full(static_cast<std::size_t>(rows * cols)), part(static_cast<std::size_t>(4 * cols));
  std::vector<std::uint16_t> part16(static_cast<std::size_t>(4 * cols));
  ASSERT_TRUE(DequantizeRows(q->view(), 0, rows, full.data()).ok());
  ASSERT_TRUE(DequantizeRows(q->view(), 5, 9, part.data()).ok());
  ASSERT_TRUE(DequantizeRowsBf16(q->view(), 5, 9, part16.data()).ok());
  for (std::int64_t i = 0; i < 4 * cols; ++i) {
    EXPECT_EQ(part[i], full[5 * cols + i]);
    EXPECT_EQ(part16[i], F32ToBf16(full[5 * cols + i]));
  }
  EXPECT_TRUE(DequantizeRows(q->view(), 9, 9, part.data()).ok());  // empty range
  EXPECT_EQ(DequantizeRows(q->view(), 10, 17, part.data()).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(DequantizeRows(q->view(), 5, 4, part.data()).code(), StatusCode::kOutOfRange);
}

TEST(Int8PerChannelTest, ChunkedQuantizationMatchesWhole) {
  const std::int64_t rows = 10, cols = 33;
  std::vector<float> w = Normal(rows * cols, 8, 0.3f);
  auto whole = QuantizeInt8PerChannel(w.data(), rows, cols);
  ASSERT_TRUE(whole.ok());
  std::vector<std::int8_t> q(static_cast<std::size_t>(rows * cols));
  std::vector<float> scales(rows);
  ASSERT_TRUE(QuantizeInt8PerChannel(w.data(), 4, cols, q.data(), scales.data()).ok());
  ASSERT_TRUE(QuantizeInt8PerChannel(w.data() + 4 * cols, 6, cols, q.data() + 4 * cols, scales.data() + 4).ok());
  EXPECT_EQ(q, whole->q);
  EXPECT_EQ(scales, whole->scales);
}

TEST(Int8PerChannelTest, NonFiniteWeightIsRejectedNamingRowAndColumn) {
  std::vector<float> w(6, 1.0f);
  w[4] = std::numeric_limits<float>::quiet_NaN();
  auto q = QuantizeInt8PerChannel(w.data(), 2, 3);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(q.status().message().find("row 1, column 1"), std::string::npos) << q.status().message();
  w[4] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(QuantizeInt8PerChannel(w.data(), 2, 3).ok());
}

TEST(Int8PerChannelTest, BadShapeIsRejected) {
  float w = 0;
  EXPECT_EQ(QuantizeInt8PerChannel(&w, 1, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(QuantizeInt8PerChannel(&w, -1, 1).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace unmask::weights
