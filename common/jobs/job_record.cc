#include "common/jobs/job_record.h"

#include <chrono>
#include <cstdio>
#include <random>
#include <utility>

namespace unmask::jobs {

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kExpired:
      return "expired";
    case JobState::kDead:
      return "dead";
  }
  return "unknown";
}

std::optional<JobState> ParseJobState(const std::string& name) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                     JobState::kCancelled, JobState::kExpired, JobState::kDead}) {
    if (name == JobStateName(s)) return s;
  }
  return std::nullopt;
}

bool IsTerminal(JobState state) {
  return state != JobState::kQueued && state != JobState::kRunning;
}

bool IsValidJobId(const std::string& job_id) {
  if (job_id.empty() || job_id.size() > kMaxJobIdLength) return false;
  for (char c : job_id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

Status ValidateNewJob(const JobRecord& record) {
  if (!record.job_id.empty() && !IsValidJobId(record.job_id)) {
    return InvalidArgumentError("job_id: must be 1-64 characters of [A-Za-z0-9_-], got '" +
                                record.job_id + "'");
  }
  if (record.model.empty()) return InvalidArgumentError("model: must not be empty");
  if (record.priority < kMinPriority || record.priority > kMaxPriority) {
    return InvalidArgumentError("priority: must be in " + std::to_string(kMinPriority) + ".." +
                                std::to_string(kMaxPriority) + ", got " +
                                std::to_string(record.priority));
  }
  if (record.deadline_unix_ms < 0) {
    return InvalidArgumentError("deadline_unix_ms: must be 0 (none) or a unix time in ms, got " +
                                std::to_string(record.deadline_unix_ms));
  }
  return OkStatus();
}

Status ErrorOf(const JobRecord& record) {
  const StatusCode code = record.error_code.value_or(StatusCode::kInternal);
  std::string message = record.error.empty() ? "failed" : record.error;
  const ErrorDetail& d = record.error_detail;
  if (d.field.empty() && d.reason.empty() && d.metadata.empty()) return Status(code, std::move(message));
  return Status(code, std::move(message), d);
}

std::string NewJobId() {
  thread_local std::mt19937_64 engine([] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device()};
    return std::mt19937_64(seed);
  }());
  char buffer[33];
  std::snprintf(buffer, sizeof(buffer), "%016llx%016llx", static_cast<unsigned long long>(engine()),
                static_cast<unsigned long long>(engine()));
  return buffer;
}

std::int64_t SystemClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace unmask::jobs
