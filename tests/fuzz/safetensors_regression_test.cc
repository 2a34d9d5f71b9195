// safetensors headers found by fuzz/safetensors_fuzz.cc (or while writing it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/checkpoint/safetensors.h"
#include "tests/fuzz/regression_input.h"

namespace unmask::checkpoint {
namespace {

using ::testing::HasSubstr;
using unmask::testing::RegressionPath;

// shape [2^62] of F32 is 2^64 bytes, which wrapped to 0 in 64-bit arithmetic and matched the
// empty data_offsets [0, 0]: a tensor of 2^62 elements was accepted over no bytes at all.
TEST(SafetensorsRegressionTest, ByteLengthThatWrapsTo64BitsIsRefused) {
  const std::string path = RegressionPath("safetensors", "shape-bytes-wrap-to-zero.safetensors");
  auto file = SafetensorsFile::Open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(file.status().message(), HasSubstr(path));
  EXPECT_THAT(file.status().message(), HasSubstr("tensor 't': shape x dtype exceeds 2^64 bytes"));
}

}  // namespace
}  // namespace unmask::checkpoint
