#include "common/telemetry/log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

namespace unmask::telemetry {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(Log, LineCarriesTraceIdAndJobId) {
  const std::string line =
      FormatLogLine(LogLevel::kInfo, "4bf92f3577b34da6a3ce929d0e0e4736", "job-17", "job done", {{"steps", "64"}});
  EXPECT_TRUE(std::regex_match(
      line, std::regex(R"(^ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z level=info( service=\S+)? )"
                       R"(trace_id=4bf92f3577b34da6a3ce929d0e0e4736 job_id=job-17 msg="job done" steps=64$)")))
      << line;
}

TEST(Log, EmptyIdsAreLeftOut) {
  const std::string line = FormatLogLine(LogLevel::kWarn, "", "", "ready");
  EXPECT_THAT(line, HasSubstr("level=warn"));
  EXPECT_THAT(line, HasSubstr(" msg=ready"));
  EXPECT_THAT(line, ::testing::Not(HasSubstr("trace_id=")));
  EXPECT_THAT(line, ::testing::Not(HasSubstr("job_id=")));
}

TEST(Log, ValuesAreQuotedAndEscaped) {
  const std::string line = FormatLogLine(LogLevel::kError, "", "j 1", "bad \"x\"\nnext", {{"path", "a=b\\c"}, {"e", ""}});
  EXPECT_THAT(line, HasSubstr(R"(job_id="j 1")"));
  EXPECT_THAT(line, HasSubstr(R"(msg="bad \"x\"\nnext")"));
  EXPECT_THAT(line, HasSubstr(R"(path="a=b\\c")"));
  EXPECT_THAT(line, HasSubstr(R"(e="")"));
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(Log, WritesOneLineToStderrWithTheServiceName) {
  SetLogServiceName("unmask-test");
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kInfo, "4bf92f3577b34da6a3ce929d0e0e4736", "job-1", "hello");
  SetMinLogLevel(LogLevel::kWarn);
  Log(LogLevel::kInfo, "", "", "filtered out");
  SetMinLogLevel(LogLevel::kInfo);
  const std::string err = ::testing::internal::GetCapturedStderr();
  SetLogServiceName("");
  EXPECT_THAT(err, MatchesRegex("ts=\\S+ level=info service=unmask-test trace_id=4bf92f3577b34da6a3ce929d0e0e4736 "
                                "job_id=job-1 msg=hello\n"));
}

}  // namespace
}  // namespace unmask::telemetry
