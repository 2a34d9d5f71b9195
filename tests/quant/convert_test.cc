#include "common/quant/convert.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace unmask::weights {
namespace {

using checkpoint::DType;

bool IsNanBf16(std::uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0; }
bool IsNanF16(std::uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

// Independent reference for f16 -> value: sign * mantissa * 2^exponent in double.
double F16Reference(std::uint16_t h) {
  const int sign = (h & 0x8000) ? -1 : 1;
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  if (e == 0x1f) return m ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
  if (e == 0) return sign * std::ldexp(m, -24);
  return sign * std::ldexp(1024 + m, e - 25);
}

// Reference f32 -> f16: nearest of all finite f16 values (ties to the even pattern), Inf from
// 65520 up (the rounding boundary above the largest finite 65504).
std::uint16_t F16NearestReference(float f) {
  if (std::isnan(f)) return 0x7e00;
  const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7c00;
  std::uint16_t lo = 0, hi = 0x7bff;  // largest pattern with value <= a
  while (lo < hi) {
    std::uint16_t mid = static_cast<std::uint16_t>((lo + hi + 1) / 2);
    if (F16Reference(mid) <= a)
      lo = mid;
    else
      hi = static_cast<std::uint16_t>(mid - 1);
  }
  if (lo == 0x7bff) return sign | lo;
  const double below = F16Reference(lo), above = F16Reference(static_cast<std::uint16_t>(lo + 1));
  if (a - below < above - a) return sign | lo;
  if (a - below > above - a) return sign | static_cast<std::uint16_t>(lo + 1);
  return sign | ((lo & 1) ? static_cast<std::uint16_t>(lo + 1) : lo);
}

// Reference f32 -> bf16 via double arithmetic.
std::uint16_t Bf16NearestReference(float f) {
  std::uint32_t u = FloatBits(f);
  const std::uint16_t down = static_cast<std::uint16_t>(u >> 16);
  if ((u & 0xffff) == 0) return down;
  const std::uint16_t up = static_cast<std::uint16_t>(down + 1);
  const double a = std::fabs(static_cast<double>(f));
  const double da = std::fabs(static_cast<double>(Bf16ToF32(down)));
  // Past the largest finite bf16 the next step is 2^128, where rounding puts Inf.
  const double ua = (up & 0x7fff) == 0x7f80 ? std::ldexp(1.0, 128) : std::fabs(static_cast<double>(Bf16ToF32(up)));
  const double to_down = a - da, to_up = ua - a;
  if (to_down < to_up) return down;
  if (to_down > to_up) return up;
  return (down & 1) ? up : down;
}

TEST(ConvertTest, Bf16ToF32IsExactForEveryPattern) {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = Bf16ToF32(static_cast<std::uint16_t>(h));
    EXPECT_EQ(FloatBits(f), h << 16);
    const std::uint16_t back = F32ToBf16(f);
    if (IsNanBf16(static_cast<std::uint16_t>(h))) {
      EXPECT_TRUE(IsNanBf16(back)) << h;
      EXPECT_EQ(back & 0x8000, h & 0x8000);
    } else {
      EXPECT_EQ(back, h);
    }
  }
}

TEST(ConvertTest, F32ToBf16RoundsToNearestEven) {
  EXPECT_EQ(F32ToBf16(BitsToFloat(0x3f808000)), 0x3f80);            // halfway, even below
  EXPECT_EQ(F32ToBf16(BitsToFloat(0x3f818000)), 0x3f82);            // halfway, odd below: up to even
  EXPECT_EQ(F32ToBf16(BitsToFloat(0x3f808001)), 0x3f81);            // above halfway
  EXPECT_EQ(F32ToBf16(BitsToFloat(0x3f807fff)), 0x3f80);            // below halfway
  EXPECT_EQ(F32ToBf16(BitsToFloat(0xbf818000)), 0xbf82);            // negative, same rule
  EXPECT_EQ(F32ToBf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to +Inf
  EXPECT_EQ(F32ToBf16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(F32ToBf16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToBf16(BitsToFloat(0x00000001)), 0x0000);  // smallest subnormal rounds to 0
  EXPECT_EQ(F32ToBf16(BitsToFloat(0x00008000)), 0x0000);  // tie, even
  EXPECT_EQ(F32ToBf16(BitsToFloat(0x00018000)), 0x0002);
  // A signalling NaN whose payload sits in the dropped bits must not become Inf.
  EXPECT_TRUE(IsNanBf16(F32ToBf16(BitsToFloat(0x7f800001))));
  EXPECT_TRUE(IsNanBf16(F32ToBf16(BitsToFloat(0xff800001))));
  EXPECT_EQ(F32ToBf16(BitsToFloat(0xff800001)) & 0x8000, 0x8000);
}

TEST(ConvertTest, F32ToBf16MatchesReferenceOnRandomBits) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 200000; ++i) {
    const float f = BitsToFloat(rng());
    if (std::isnan(f)) continue;
    ASSERT_EQ(F32ToBf16(f), Bf16NearestReference(f)) << std::hex << FloatBits(f);
  }
}

TEST(ConvertTest, F16ToF32IsExactForEveryPattern) {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = F16ToF32(static_cast<std::uint16_t>(h));
    const double ref = F16Reference(static_cast<std::uint16_t>(h));
    if (IsNanF16(static_cast<std::uint16_t>(h))) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0);
      EXPECT_TRUE(IsNanF16(F32ToF16(f)));
    } else {
      EXPECT_EQ(static_cast<double>(f), ref) << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << h;
      EXPECT_EQ(F32ToF16(f), h) << h;  // round trip
    }
  }
}

TEST(ConvertTest, F32ToF16EdgeCases) {
  EXPECT_EQ(F32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(F32ToF16(65519.99f), 0x7bff);
  EXPECT_EQ(F32ToF16(65520.0f), 0x7c00);  // halfway to 65536: ties to even -> Inf
  EXPECT_EQ(F32ToF16(1e10f), 0x7c00);
  EXPECT_EQ(F32ToF16(-1e10f), 0xfc00);
  EXPECT_EQ(F32ToF16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and 1: even
  EXPECT_EQ(F32ToF16(std::ldexp(1.0001f, -25)), 0x0001);
  EXPECT_EQ(F32ToF16(std::ldexp(3.0f, -25)), 0x0002);     // tie between 1 and 2: even
  EXPECT_EQ(F32ToF16(std::ldexp(1023.0f, -24)), 0x03ff);  // largest subnormal
  EXPECT_EQ(F32ToF16(std::ldexp(2047.0f, -25)), 0x0400);  // rounds up into the normals
  EXPECT_EQ(F32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToF16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(F32ToF16(std::numeric_limits<float>::quiet_NaN()), 0x7e00);
  EXPECT_TRUE(IsNanF16(F32ToF16(BitsToFloat(0x7f800001))));
  EXPECT_EQ(F32ToF16(BitsToFloat(0xffc00000)), 0xfe00);
  EXPECT_EQ(F32ToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie, even below
  EXPECT_EQ(F32ToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie, odd below
}

TEST(ConvertTest, F32ToF16MatchesReferenceAcrossTheRange) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> exponent(-30, 17);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  for (int i = 0; i < 100000; ++i) {
    float f = std::ldexp(mantissa(rng), exponent(rng));
    if (i % 2) f = -f;
    ASSERT_EQ(F32ToF16(f), F16NearestReference(f)) << f;
  }
  // Exact midpoints between neighbouring f16 values, where only the tie rule decides.
  for (std::uint32_t h = 0; h < 0x7bff; h += 7) {
    const double mid =
        (F16Reference(static_cast<std::uint16_t>(h)) + F16Reference(static_cast<std::uint16_t>(h + 1))) / 2;
    const float f = static_cast<float>(mid);
    ASSERT_EQ(static_cast<double>(f), mid);
    ASSERT_EQ(F32ToF16(f), F16NearestReference(f)) << h;
  }
}

TEST(ConvertTest, BufferLoopsMatchScalarIncludingTails) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (std::size_t n : {0u, 1u, 7u, 64u, 1001u}) {
    std::vector<float> f(n);
    for (auto& x : f) x = dist(rng);
    std::vector<std::uint16_t> b(n), h(n);
    std::vector<float> back(n);
    F32ToBf16(f.data(), b.data(), n);
    F32ToF16(f.data(), h.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(b[i], F32ToBf16(f[i]));
      EXPECT_EQ(h[i], F32ToF16(f[i]));
    }
    Bf16ToF32(b.data(), back.data(), n);
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(back[i], Bf16ToF32(b[i]));
    F16ToF32(h.data(), back.data(), n);
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(back[i], F16ToF32(h[i]));
  }
}

TEST(ConvertTest, ConvertFloatsBetweenAllPairs) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const std::size_t n = 5000;  // more than one internal block of the bf16<->f16 path
  std::vector<float> f(n);
  for (auto& x : f) x = dist(rng);
  std::vector<std::uint16_t> bf(n), hf(n), out(n);
  ASSERT_TRUE(ConvertFloats(f.data(), DType::kF32, bf.data(), DType::kBF16, n).ok());
  ASSERT_TRUE(ConvertFloats(f.data(), DType::kF32, hf.data(), DType::kF16, n).ok());
  ASSERT_TRUE(ConvertFloats(bf.data(), DType::kBF16, out.data(), DType::kF16, n).ok());
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(out[i], F32ToF16(Bf16ToF32(bf[i])));
  ASSERT_TRUE(ConvertFloats(hf.data(), DType::kF16, out.data(), DType::kBF16, n).ok());
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(out[i], F32ToBf16(F16ToF32(hf[i])));
  ASSERT_TRUE(ConvertFloats(bf.data(), DType::kBF16, out.data(), DType::kBF16, n).ok());
  EXPECT_EQ(out, bf);
  std::vector<float> back(n);
  ASSERT_TRUE(ConvertFloats(hf.data(), DType::kF16, back.data(), DType::kF32, n).ok());
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(back[i], F16ToF32(hf[i]));

  Status bad = ConvertFloats(f.data(), DType::kI32, out.data(), DType::kBF16, n);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("I32"), std::string::npos) << bad.message();
}

}  // namespace
}  // namespace unmask::weights
