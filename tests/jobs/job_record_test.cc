// JobRecord validation, state names, ids, and the Redis hash encoding (no server needed).
#include "common/jobs/job_record.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>

#include "common/jobs/job_hash_codec.h"

namespace unmask::jobs {
namespace {

TEST(JobRecordTest, StateNamesRoundTrip) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                     JobState::kCancelled, JobState::kExpired, JobState::kDead}) {
    EXPECT_EQ(ParseJobState(JobStateName(s)), s);
  }
  EXPECT_EQ(ParseJobState("Queued"), std::nullopt);
  EXPECT_FALSE(IsTerminal(JobState::kQueued));
  EXPECT_FALSE(IsTerminal(JobState::kRunning));
  EXPECT_TRUE(IsTerminal(JobState::kExpired));
}

TEST(JobRecordTest, ValidationNamesTheField) {
  JobRecord ok;
  ok.model = "m";
  EXPECT_TRUE(ValidateNewJob(ok).ok());
  ok.priority = kMaxPriority;
  EXPECT_TRUE(ValidateNewJob(ok).ok());
  ok.priority = kMinPriority;
  EXPECT_TRUE(ValidateNewJob(ok).ok());

  JobRecord bad = ok;
  bad.model.clear();
  EXPECT_NE(ValidateNewJob(bad).message().find("model"), std::string::npos);
  bad = ok;
  bad.priority = kMaxPriority + 1;
  EXPECT_EQ(ValidateNewJob(bad).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ValidateNewJob(bad).message().find("priority"), std::string::npos);
  bad = ok;
  bad.deadline_unix_ms = -1;
  EXPECT_NE(ValidateNewJob(bad).message().find("deadline"), std::string::npos);
  bad = ok;
  bad.job_id = std::string(kMaxJobIdLength + 1, 'a');
  EXPECT_NE(ValidateNewJob(bad).message().find("job_id"), std::string::npos);
  bad.job_id = "a b";
  EXPECT_EQ(ValidateNewJob(bad).code(), StatusCode::kInvalidArgument);
}

TEST(JobRecordTest, GeneratedIdsAreValidAndDistinct) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewJobId();
    EXPECT_TRUE(IsValidJobId(id)) << id;
    EXPECT_EQ(id.size(), 32u);
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000u);
}

TEST(JobHashCodecTest, NewJobRoundTripsIncludingBinaryPayload) {
  JobRecord job;
  job.model = "llada";
  job.payload = std::string("\0\x01\x02\xff", 4);
  job.priority = -7;
  job.deadline_unix_ms = 123;
  job.idempotency_key = "k";
  job.traceparent = "00-aa-bb-01";
  auto decoded = DecodeJobHash("id1", EncodeNewJob(job, "id1", 555));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->job_id, "id1");
  EXPECT_EQ(decoded->payload, job.payload);
  EXPECT_EQ(decoded->priority, -7);
  EXPECT_EQ(decoded->deadline_unix_ms, 123);
  EXPECT_EQ(decoded->traceparent, job.traceparent);
  EXPECT_EQ(decoded->state, JobState::kQueued);
  EXPECT_EQ(decoded->created_unix_ms, 555);
  EXPECT_EQ(decoded->updated_unix_ms, 555);
}

TEST(JobHashCodecTest, CorruptFieldsAreDataLoss) {
  JobRecord job;
  job.model = "m";
  struct Case {
    std::string field, value, expect;
  };
  for (const Case& c :
       {Case{"priority", "11", "out of range"}, Case{"priority", "1.5", "integer"},
        Case{"deadline_ms", "", "integer"}, Case{"state", "", "job state"},
        Case{"attempts", "99999999999", "out of range"}, Case{"model", "", "empty"}}) {
    HashFields fields = EncodeNewJob(job, "j", 1);
    for (auto& [name, value] : fields) {
      if (name == c.field) value = c.value;
    }
    auto decoded = DecodeJobHash("j", fields);
    EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss) << c.field << "=" << c.value;
    EXPECT_NE(decoded.status().message().find("job j"), std::string::npos);
    EXPECT_NE(decoded.status().message().find("'" + c.field + "'"), std::string::npos);
    EXPECT_NE(decoded.status().message().find(c.expect), std::string::npos)
        << decoded.status().message();
  }
  HashFields fields = EncodeNewJob(job, "j", 1);
  fields.erase(fields.begin() + 7);  // state
  EXPECT_NE(DecodeJobHash("j", fields).status().message().find("'state' is missing"),
            std::string::npos);
}

// The hash of a job that failed with `code` and `detail`, as the finish script leaves it.
HashFields FailedJobHash(const std::optional<StatusCode>& code, const ErrorDetail& detail) {
  JobRecord job;
  job.model = "m";
  HashFields fields = EncodeNewJob(job, "j", 1);
  for (auto& [name, value] : fields) {
    if (name == "state") value = "failed";
    if (name == "error") value = "params.steps: must be >= 1, got 0";
  }
  for (auto& field : EncodeErrorDetail(code, detail)) fields.push_back(field);
  return fields;
}

TEST(JobHashCodecTest, AFailuresCodeAndDetailRoundTrip) {
  const ErrorDetail detail{"params.steps", "INVALID_VALUE", {{"min", "1"}, {"got", "0"}, {"note", "a \"quoted\" = value"}}};
  auto decoded = DecodeJobHash("j", FailedJobHash(StatusCode::kInvalidArgument, detail));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->error_code, StatusCode::kInvalidArgument);
  EXPECT_EQ(decoded->error_detail.field, "params.steps");
  EXPECT_EQ(decoded->error_detail.reason, "INVALID_VALUE");
  EXPECT_EQ(decoded->error_detail.metadata, detail.metadata);
  const Status error = ErrorOf(*decoded);
  EXPECT_EQ(error.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(error.message(), "params.steps: must be >= 1, got 0");
  EXPECT_EQ(error.field(), "params.steps");
  EXPECT_EQ(error.reason(), "INVALID_VALUE");

  // A code without a detail writes the code alone; no code and no detail write nothing.
  EXPECT_EQ(EncodeErrorDetail(StatusCode::kDataLoss, {}), (HashFields{{"error_code", "15"}}));
  EXPECT_TRUE(EncodeErrorDetail(std::nullopt, {}).empty());
}

TEST(JobHashCodecTest, ARecordFromBeforeCodesWereKeptReadsAsInternal) {
  // What an older scheduler stored for a failed job: the message, no error_* fields.
  auto decoded = DecodeJobHash("j", FailedJobHash(std::nullopt, {}));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->state, JobState::kFailed);
  EXPECT_EQ(decoded->error_code, std::nullopt);
  const Status error = ErrorOf(*decoded);
  EXPECT_EQ(error.code(), StatusCode::kInternal);
  EXPECT_EQ(error.message(), "params.steps: must be >= 1, got 0");
  EXPECT_EQ(error.detail(), nullptr);
}

TEST(JobHashCodecTest, MalformedErrorFieldsAreDataLossNamingTheField) {
  struct Case {
    std::string field, value, expect;
  };
  for (const Case& c : {Case{"error_code", "", "integer"}, Case{"error_code", "INTERNAL", "integer"},
                        Case{"error_code", "0", "out of range"}, Case{"error_code", "17", "out of range"},
                        Case{"error_metadata", "limit=8", "JSON object"}, Case{"error_metadata", "[\"8\"]", "JSON object"},
                        Case{"error_metadata", "{\"limit\": 8}", "not a string: 'limit'"}}) {
    HashFields fields = FailedJobHash(StatusCode::kInvalidArgument, {"params.steps", "INVALID_VALUE", {{"limit", "8"}}});
    for (auto& [name, value] : fields) {
      if (name == c.field) value = c.value;
    }
    auto decoded = DecodeJobHash("j", fields);
    EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss) << c.field << "=" << c.value;
    EXPECT_NE(decoded.status().message().find("job j"), std::string::npos);
    EXPECT_NE(decoded.status().message().find("'" + c.field + "'"), std::string::npos) << decoded.status().message();
    EXPECT_NE(decoded.status().message().find(c.expect), std::string::npos) << decoded.status().message();
  }
}

}  // namespace
}  // namespace unmask::jobs
