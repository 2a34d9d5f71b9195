#include "common/telemetry/trace_context.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace unmask::telemetry {
namespace {

using ::testing::HasSubstr;

constexpr char kExample[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceContext, ParseFormatRoundTrip) {
  auto ctx = ParseTraceparent(kExample);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_TRUE(ctx->valid());
  EXPECT_TRUE(ctx->sampled());
  EXPECT_TRUE(ctx->remote);
  EXPECT_EQ(ctx->trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(ctx->span_id_hex(), "00f067aa0ba902b7");
  EXPECT_EQ(ctx->trace_id[0], 0x4b);
  EXPECT_EQ(ctx->trace_id[15], 0x36);
  EXPECT_EQ(ctx->span_id[7], 0xb7);
  EXPECT_EQ(FormatTraceparent(*ctx), kExample);

  auto unsampled = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  ASSERT_TRUE(unsampled.ok());
  EXPECT_FALSE(unsampled->sampled());
  EXPECT_EQ(FormatTraceparent(*unsampled), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
}

TEST(TraceContext, NewIdsRoundTrip) {
  SpanContext c;
  c.trace_id = NewTraceId();
  c.span_id = NewSpanId();
  c.flags = kTraceFlagSampled;
  const std::string tp = FormatTraceparent(c);
  ASSERT_EQ(tp.size(), 55u);
  auto back = ParseTraceparent(tp);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, c);
}

TEST(TraceContext, TracestateIsCarriedAsIs) {
  const std::string state = "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7";
  auto ctx = ParseTraceparent(kExample, state);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ(ctx->trace_state, state);
}

TEST(TraceContext, UpperCaseHexIsAcceptedAndFormattedLowerCase) {
  auto ctx = ParseTraceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01");
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(FormatTraceparent(*ctx), kExample);
}

TEST(TraceContext, FutureVersionIsParsedAsVersion00) {
  auto ctx = ParseTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds");
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(FormatTraceparent(*ctx), kExample);
}

TEST(TraceContext, InvalidContextFormatsEmpty) {
  EXPECT_FALSE(SpanContext{}.valid());
  EXPECT_EQ(FormatTraceparent(SpanContext{}), "");
  EXPECT_EQ(SpanContext{}.trace_id_hex(), "");
}

struct BadCase {
  const char* name;
  const char* traceparent;
  const char* error;  // a part of the message
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name << " '" << c.traceparent << "'"; }

class BadTraceparent : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadTraceparent, IsRejectedWithAClearError) {
  const BadCase& c = GetParam();
  auto ctx = ParseTraceparent(c.traceparent);
  ASSERT_FALSE(ctx.ok()) << c.traceparent;
  EXPECT_EQ(ctx.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(ctx.status().message(), HasSubstr("traceparent"));
  EXPECT_THAT(ctx.status().message(), HasSubstr(c.error));
}

INSTANTIATE_TEST_SUITE_P(
    TraceContext, BadTraceparent,
    ::testing::Values(
        BadCase{"Empty", "", "empty"},
        BadCase{"TooShort", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1", "too short"},
        BadCase{"TraceIdTooShort", "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "too short"},
        BadCase{"VersionFF", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "version ff"},
        BadCase{"VersionNotHex", "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "version"},
        BadCase{"WrongSeparator", "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", "separated by '-'"},
        BadCase{"SeparatorsMisplaced", "00-4bf92f3577b34da6a3ce929d0e0e47-3600f067aa0ba902b7-01", "separated by '-'"},
        BadCase{"TraceIdNotHex", "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", "trace id is not"},
        BadCase{"TraceIdZero", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "trace id is all zeros"},
        BadCase{"SpanIdNotHex", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba9z2b7-01", "parent span id is not"},
        BadCase{"SpanIdZero", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "span id is all zeros"},
        BadCase{"FlagsNotHex", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x", "flags"},
        BadCase{"Version00TrailingData", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
                "exactly 55"},
        BadCase{"Version00OneCharTooLong", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011",
                "exactly 55"},
        BadCase{"FutureVersionBadTail", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
                "must start with '-'"},
        BadCase{"SpacesAround", " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "version"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(TraceContext, ParseIdsRejectZeroAndBadHex) {
  TraceId t{};
  SpanId s{};
  EXPECT_TRUE(ParseTraceId("4bf92f3577b34da6a3ce929d0e0e4736", &t));
  EXPECT_FALSE(ParseTraceId("00000000000000000000000000000000", &t));
  EXPECT_FALSE(ParseTraceId("4bf92f3577b34da6a3ce929d0e0e47", &t));
  EXPECT_TRUE(ParseSpanId("00f067aa0ba902b7", &s));
  EXPECT_FALSE(ParseSpanId("0000000000000000", &s));
  EXPECT_FALSE(ParseSpanId("00f067aa0ba902bz", &s));
}

TEST(TraceContext, NewIdsAreNonZeroAndDistinct) {
  std::set<TraceId> traces;
  std::set<SpanId> spans;
  for (int i = 0; i < 1000; ++i) {
    traces.insert(NewTraceId());
    spans.insert(NewSpanId());
  }
  EXPECT_EQ(traces.size(), 1000u);
  EXPECT_EQ(spans.size(), 1000u);
  EXPECT_EQ(traces.count(TraceId{}), 0u);
  EXPECT_EQ(spans.count(SpanId{}), 0u);
}

TraceId WithLow64(std::uint64_t low) {
  TraceId id{};
  id[0] = 0xab;  // the high half must not matter
  for (int i = 15; i >= 8; --i, low >>= 8) id[i] = static_cast<std::uint8_t>(low);
  return id;
}

TEST(Sampling, RatioZeroNeverAndOneAlways) {
  for (int i = 0; i < 1000; ++i) {
    const TraceId id = NewTraceId();
    EXPECT_FALSE(ShouldSample(id, 0.0));
    EXPECT_TRUE(ShouldSample(id, 1.0));
  }
  EXPECT_FALSE(ShouldSample(WithLow64(0), 0.0));
  EXPECT_TRUE(ShouldSample(WithLow64(~0ull), 1.0));
  EXPECT_FALSE(ShouldSample(WithLow64(0), -1.0));
  EXPECT_TRUE(ShouldSample(WithLow64(~0ull), 2.0));
}

TEST(Sampling, HalfIsDecidedByTheTraceId) {
  // The boundary for 0.5 is 2^63: below samples, at or above does not.
  EXPECT_TRUE(ShouldSample(WithLow64(0), 0.5));
  EXPECT_TRUE(ShouldSample(WithLow64(0x7fffffffffffffffull), 0.5));
  EXPECT_FALSE(ShouldSample(WithLow64(0x8000000000000000ull), 0.5));
  EXPECT_FALSE(ShouldSample(WithLow64(~0ull), 0.5));

  int sampled = 0;
  for (int i = 0; i < 20000; ++i) {
    const TraceId id = NewTraceId();
    const bool a = ShouldSample(id, 0.5);
    EXPECT_EQ(a, ShouldSample(id, 0.5)) << "same id, same answer";
    if (a) {
      ++sampled;
      EXPECT_TRUE(ShouldSample(id, 0.75)) << "sampled at 0.5 implies sampled at any larger ratio";
    }
    if (ShouldSample(id, 0.25)) {
      EXPECT_TRUE(a);
    }
  }
  // 20000 fair draws: the standard deviation of the count is ~71; allow 10 of them.
  EXPECT_NEAR(sampled, 10000, 710);
}

}  // namespace
}  // namespace unmask::telemetry
