// One log line per event on stderr, key=value (logfmt), carrying the trace id and the job id so
// that a log line leads to its trace in Jaeger and back:
//
//   ts=2025-01-02T03:04:05.678Z level=info service=unmask-executor trace_id=4bf9...4736 job_id=j-17 msg="job done" steps=64
//
// Values with spaces, quotes, '=' or control characters are quoted with \" \\ \n \t escapes;
// empty trace / job ids are left out. Each line is written with a single write call, so lines
// from different threads never interleave.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace unmask::telemetry {

enum class LogLevel { kDebug, kInfo, kWarn, kError };
const char* LogLevelName(LogLevel level);  // "debug", "info", "warn", "error"

// The service name put on every line (service=...); empty (the default) leaves it out.
void SetLogServiceName(std::string name);
// Lines below this level are not written (default kInfo).
void SetMinLogLevel(LogLevel level);

using LogField = std::pair<std::string_view, std::string_view>;

// The line without the trailing newline (what Log writes), for tests.
std::string FormatLogLine(LogLevel level, std::string_view trace_id, std::string_view job_id,
                          std::string_view message, std::initializer_list<LogField> fields = {});
// Writes one line to stderr.
void Log(LogLevel level, std::string_view trace_id, std::string_view job_id, std::string_view message,
         std::initializer_list<LogField> fields = {});

}  // namespace unmask::telemetry
