// bf16_rows.h on every path (AVX-512F, AVX2, plain C++; a path this CPU lacks runs plain C++):
// each element exactly what c10::BFloat16's scalar arithmetic gives, over values chosen to hit
// every rounding case (ties both ways, carries into the exponent, infinities, NaN, subnormals,
// signed zeros) and lengths that leave every tail.
#include <c10/util/BFloat16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/model/bf16_rows.h"

namespace unmask::model {
namespace {

float FromBits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

std::uint16_t Bits(c10::BFloat16 b) { return b.x; }

float Widen(std::uint16_t b) { return static_cast<float>(c10::BFloat16(b, c10::BFloat16::from_bits())); }

// n float32 values: the special ones first, then random bit patterns (all exponents, both signs).
std::vector<float> Floats(std::size_t n, unsigned seed) {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f,
                          FromBits(0x3F808000u),  // a tie, even below: rounds down
                          FromBits(0x3F818000u),  // a tie, odd below: rounds up
                          FromBits(0x3F80FFFFu),  // just under the next bf16
                          FromBits(0x7F7FFFFFu),  // the largest float: rounds to infinity
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), FromBits(0xFFC12345u),  // NaNs
                          FromBits(0x00000001u), FromBits(0x0007FFFFu), FromBits(0x80018000u)};  // subnormals
  std::mt19937 rng(seed);
  while (v.size() < n) v.push_back(FromBits(static_cast<std::uint32_t>(rng())));
  v.resize(n);
  return v;
}

// Finite bf16 values of moderate size (what activations hold), so that sums stay finite.
std::vector<std::uint16_t> Bf16Values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<std::uint16_t> v(n);
  for (auto& b : v) b = Bits(c10::BFloat16(normal(rng)));
  return v;
}

class Bf16RowsTest : public ::testing::TestWithParam<GemmPath> {};

// Lengths below one vector, at one, and with a tail after several (16 and 8 lanes).
const std::int64_t kLengths[] = {1, 7, 8, 15, 16, 17, 37, 64, 515};

TEST_P(Bf16RowsTest, RoundsAsC10BFloat16) {
  for (const std::int64_t n : kLengths) {
    const std::vector<float> in = Floats(static_cast<std::size_t>(n) + 3000, static_cast<unsigned>(n));
    for (const std::int64_t len : {n, static_cast<std::int64_t>(in.size())}) {
      std::vector<std::uint16_t> out(static_cast<std::size_t>(len), 0xDEAD);
      RoundToBf16(GetParam(), in.data(), len, out.data());
      for (std::int64_t i = 0; i < len; ++i)
        ASSERT_EQ(out[i], Bits(c10::BFloat16(in[i]))) << "element " << i << " of " << len << ", value " << in[i];
    }
  }
}

TEST_P(Bf16RowsTest, AddScaledIsOneBf16IndexAddStep) {
  for (const std::int64_t n : kLengths) {
    std::vector<std::uint16_t> y = Bf16Values(n, 1), o = Bf16Values(n, 2);
    const std::vector<std::uint16_t> y0 = y;
    const float w = Widen(Bits(c10::BFloat16(0.3712f)));
    AddScaledBf16(GetParam(), y.data(), o.data(), w, n);
    for (std::int64_t i = 0; i < n; ++i) {
      const c10::BFloat16 product(Widen(o[i]) * w);
      ASSERT_EQ(y[i], Bits(c10::BFloat16(Widen(y0[i]) + static_cast<float>(product)))) << "element " << i << " of " << n;
    }
  }
}

TEST_P(Bf16RowsTest, AccumulateIsAProductThenASum) {
  for (const std::int64_t n : kLengths) {
    const std::vector<std::uint16_t> o = Bf16Values(n, 3);
    std::vector<float> acc(static_cast<std::size_t>(n));
    std::mt19937 rng(4);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto& a : acc) a = normal(rng);
    const std::vector<float> acc0 = acc;
    const float w = 0.8123457f;
    AccumulateScaled(GetParam(), acc.data(), o.data(), w, n);
    for (std::int64_t i = 0; i < n; ++i) {
      volatile float product = Widen(o[i]) * w;  // rounded to float32 before the sum, never fused
      const float expected = acc0[i] + product;
      ASSERT_EQ(std::memcmp(&acc[i], &expected, sizeof expected), 0)
          << "element " << i << " of " << n << ": " << acc[i] << " vs " << expected;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPath, Bf16RowsTest, ::testing::Values(GemmPath::kAvx512, GemmPath::kAvx2, GemmPath::kBlas),
                         [](const ::testing::TestParamInfo<GemmPath>& info) { return GemmPathName(info.param); });

}  // namespace
}  // namespace unmask::model
