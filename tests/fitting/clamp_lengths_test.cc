#include "common/fitting/clamp_lengths.h"

#include <gtest/gtest.h>

namespace unmask::fitting {
namespace {

TEST(ChooseLengths, KeepsTheBlockAndTakesTheLargestMultipleThatFits) {
  const auto l = ChooseLengths(256, 32, 1, [](std::int64_t gen, std::int64_t) { return gen <= 100; });
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->gen, 96);
  EXPECT_EQ(l->block, 32);
}

TEST(ChooseLengths, ShrinksTheBlockBeforeTheLengthWhenOneBlockDoesNotFit) {
  // Logits rows (the block) are what does not fit: the full length stays.
  const auto l = ChooseLengths(256, 64, 1, [](std::int64_t, std::int64_t block) { return block <= 16; });
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->gen, 256);
  EXPECT_EQ(l->block, 16);
}

TEST(ChooseLengths, LongestLengthFirstThenLargestDividingBlock) {
  const auto l = ChooseLengths(256, 64, 1, [](std::int64_t gen, std::int64_t block) { return gen * block <= 1000; });
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->gen, 256);
  EXPECT_EQ(l->block, 2);
  const auto m = ChooseLengths(200, 64, 1, [](std::int64_t gen, std::int64_t) { return gen <= 50; });
  ASSERT_TRUE(m.has_value());  // no multiple of 64 fits: 50 in blocks of 50
  EXPECT_EQ(m->gen, 50);
  EXPECT_EQ(m->block, 50);
}

TEST(ChooseLengths, LengthLimitWithABlockLongerThanTheRoom) {
  const auto all = [](std::int64_t, std::int64_t) { return true; };
  auto l = ChooseLengths(100, 32, 1, all);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->gen, 96);
  EXPECT_EQ(l->block, 32);
  l = ChooseLengths(100, 128, 1, all);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->gen, 100);
  EXPECT_EQ(l->block, 100);
  l = ChooseLengths(97, 128, 1, all);  // prime: one block
  EXPECT_EQ(l->gen, 97);
  EXPECT_EQ(l->block, 97);
}

TEST(ChooseLengths, NothingBelowTheFloor) {
  EXPECT_FALSE(ChooseLengths(256, 32, 16, [](std::int64_t gen, std::int64_t) { return gen <= 10; }).has_value());
  const auto l = ChooseLengths(256, 32, 16, [](std::int64_t gen, std::int64_t) { return gen <= 20; });
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->gen, 20);  // no multiple of 32 fits; 20 >= the floor
  EXPECT_EQ(l->block, 20);
}

}  // namespace
}  // namespace unmask::fitting
