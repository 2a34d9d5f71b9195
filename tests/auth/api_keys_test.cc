#include "common/auth/api_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "common/auth/sha256.h"

namespace unmask::auth {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

std::vector<ApiKeyEntry> Entries() {
  return {{Sha256Hex("open-key"), "open", {}, 1},
          {Sha256Hex("two-jobs-key"), "two-jobs", KeyLimits{2, 0}, 2},
          {Sha256Hex("slow-key"), "slow", KeyLimits{0, 2}, 3}};
}

struct FakeTime {
  Clock::time_point now{};
  ApiKeys::Clock clock() {
    return [this] { return now; };
  }
};

TEST(ApiKeysTest, TheRightKeyAuthenticatesAsItsName) {
  ApiKeys keys(Entries());
  auto key = keys.Authenticate("Bearer open-key");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ((*key)->name, "open");
  auto limited = keys.Authenticate("bearer  two-jobs-key ");  // the scheme in any case, spaces around
  ASSERT_TRUE(limited.ok()) << limited.status().ToString();
  EXPECT_EQ((*limited)->name, "two-jobs");
}

TEST(ApiKeysTest, MissingAndWrongKeysAreUnauthenticated) {
  ApiKeys keys(Entries());
  for (const char* value : {"", "   ", "Bearer", "Bearer ", "Bearer    "}) {
    auto r = keys.Authenticate(value);
    ASSERT_FALSE(r.ok()) << value;
    EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated);
    EXPECT_THAT(r.status().message(), HasSubstr("an API key is required")) << value;
  }
  for (const char* value : {"Bearer wrong-key", "Bearer open-key2", "Bearer OPEN-KEY", "Bearer open"}) {
    auto r = keys.Authenticate(value);
    ASSERT_FALSE(r.ok()) << value;
    EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated);
    EXPECT_THAT(r.status().message(), HasSubstr("not valid")) << value;
  }
  // The key without the scheme, another scheme, or the hash itself in place of the key.
  for (std::string value : {std::string("open-key"), std::string("Basic b3Blbi1rZXk="), "Bearer " + Sha256Hex("open-key")}) {
    auto r = keys.Authenticate(value);
    ASSERT_FALSE(r.ok()) << value;
    EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated) << value;
  }
}

TEST(ApiKeysTest, RequestsPerSecondIsABucketOfOneSecond) {
  FakeTime t;
  ApiKeys keys(Entries(), t.clock());
  const ApiKey* slow = *keys.Authenticate("Bearer slow-key");
  const ApiKey* open = *keys.Authenticate("Bearer open-key");
  EXPECT_TRUE(keys.AdmitRequest(*slow).ok());
  EXPECT_TRUE(keys.AdmitRequest(*slow).ok());
  Status third = keys.AdmitRequest(*slow);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(third.message(), HasSubstr("key 'slow' is over requests_per_second=2"));
  EXPECT_TRUE(IsKeyLimit(third));
  EXPECT_EQ(third.reason(), "API_KEY_RATE");
  EXPECT_EQ(third.detail()->metadata.at("limit"), "2");
  EXPECT_EQ(third.detail()->metadata.at("key"), "slow");
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(keys.AdmitRequest(*open).ok());  // no limit of its own
  t.now += std::chrono::milliseconds(500);                                  // one request's worth back
  EXPECT_TRUE(keys.AdmitRequest(*slow).ok());
  EXPECT_FALSE(keys.AdmitRequest(*slow).ok());
  t.now += std::chrono::seconds(60);  // never more than one second's worth saved up
  EXPECT_TRUE(keys.AdmitRequest(*slow).ok());
  EXPECT_TRUE(keys.AdmitRequest(*slow).ok());
  EXPECT_FALSE(keys.AdmitRequest(*slow).ok());
}

TEST(ApiKeysTest, QueuedJobsAreCountedUntilTheyFinish) {
  ApiKeys keys(Entries());
  const ApiKey* two = *keys.Authenticate("Bearer two-jobs-key");
  std::set<std::string> finished;
  auto is_finished = [&](const std::string& id) { return finished.count(id) > 0; };
  {
    auto a = keys.ReserveJob(*two, is_finished);
    ASSERT_TRUE(a.ok());
    a->Commit("job-a");
  }
  auto b = keys.ReserveJob(*two, is_finished);
  ASSERT_TRUE(b.ok());
  auto c = keys.ReserveJob(*two, is_finished);  // job-a committed and b reserved: full
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(c.status().message(), HasSubstr("key 'two-jobs' has 2 jobs queued or running, its max_queued_jobs=2"));
  EXPECT_TRUE(IsKeyLimit(c.status()));
  EXPECT_EQ(c.status().reason(), "API_KEY_LIMIT");
  EXPECT_EQ(c.status().detail()->metadata.at("limit"), "2");
  b->Commit("job-b");
  EXPECT_EQ(keys.JobsHeld(*two), 2);
  finished.insert("job-a");
  auto d = keys.ReserveJob(*two, is_finished);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(keys.JobsHeld(*two), 2);  // job-b and d
}

TEST(ApiKeysTest, ARefusedRequestGivesItsReservationBack) {
  ApiKeys keys(Entries());
  const ApiKey* two = *keys.Authenticate("Bearer two-jobs-key");
  auto never = [](const std::string&) { return false; };
  for (int i = 0; i < 5; ++i) {
    auto r = keys.ReserveJob(*two, never);
    ASSERT_TRUE(r.ok());  // dropped without Commit: the request was refused after all
  }
  EXPECT_EQ(keys.JobsHeld(*two), 0);
  auto moved = keys.ReserveJob(*two, never);
  JobReservation held = std::move(*moved);
  EXPECT_EQ(keys.JobsHeld(*two), 1);
  held = JobReservation();
  EXPECT_EQ(keys.JobsHeld(*two), 0);
}

TEST(ApiKeysTest, KeysWithoutAJobLimitAreNotCounted) {
  ApiKeys keys(Entries());
  const ApiKey* open = *keys.Authenticate("Bearer open-key");
  for (int i = 0; i < 10; ++i) {
    auto r = keys.ReserveJob(*open, [](const std::string&) { return false; });
    ASSERT_TRUE(r.ok());
    r->Commit("job-" + std::to_string(i));
  }
  EXPECT_EQ(keys.JobsHeld(*open), 0);
}

TEST(ApiKeysTest, OtherResourceExhaustedIsNotAKeyLimit) {
  EXPECT_FALSE(IsKeyLimit(ResourceExhaustedError("the queue is full (3 jobs); try again later")));
  EXPECT_FALSE(IsKeyLimit(OkStatus()));
  // Only the reason counts, never the message: a message that reads like a key's refusal is not one.
  EXPECT_FALSE(IsKeyLimit(ResourceExhaustedError("API key limit: key 'x' has 2 jobs queued or running")));
  EXPECT_FALSE(IsKeyLimit(ResourceExhaustedError("x").WithReason("QUEUE_FULL")));
  EXPECT_TRUE(IsKeyLimit(ResourceExhaustedError("x").WithReason("API_KEY_LIMIT")));
  EXPECT_TRUE(IsKeyLimit(ResourceExhaustedError("x").WithReason("API_KEY_RATE")));
  EXPECT_FALSE(IsKeyLimit(InvalidArgumentError("x").WithReason("API_KEY_LIMIT")));  // only RESOURCE_EXHAUSTED
}

}  // namespace
}  // namespace unmask::auth
