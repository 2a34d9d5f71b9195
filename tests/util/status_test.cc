#include "common/util/status.h"

#include <gtest/gtest.h>

namespace unmask {
namespace {

TEST(StatusDetail, PlainErrorsHaveNone) {
  Status s = InvalidArgumentError("bad");
  EXPECT_EQ(s.detail(), nullptr);
  EXPECT_EQ(s.field(), "");
  EXPECT_EQ(s.reason(), "");
}

TEST(StatusDetail, InvalidFieldNamesTheFieldInMessageAndDetail) {
  Status s = InvalidFieldError("params.steps", "must be >= 1, got 0");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "params.steps: must be >= 1, got 0");
  ASSERT_NE(s.detail(), nullptr);
  EXPECT_EQ(s.field(), "params.steps");
}

TEST(StatusDetail, ContextKeepsTheDetailAndReasonAddsToIt) {
  Status s = InvalidFieldError("ids[3]", "outside the vocabulary").WithContext("request");
  EXPECT_EQ(s.message(), "request: ids[3]: outside the vocabulary");
  EXPECT_EQ(s.field(), "ids[3]");
  Status r = ResourceExhaustedError("the queue is full").WithReason("QUEUE_FULL", {{"limit", "1000"}});
  EXPECT_EQ(r.reason(), "QUEUE_FULL");
  EXPECT_EQ(r.detail()->metadata.at("limit"), "1000");
  EXPECT_EQ(r.WithField("model").reason(), "QUEUE_FULL");
  EXPECT_EQ(r.WithField("model").field(), "model");
  EXPECT_EQ(r.field(), "");  // copies are independent
}

TEST(StatusDetail, OkStaysOk) {
  EXPECT_TRUE(OkStatus().WithField("x").ok());
  EXPECT_EQ(OkStatus().WithReason("Y").detail(), nullptr);
}

}  // namespace
}  // namespace unmask
