// What only the in-process store has: its start-up description and its TTL bookkeeping.
#include <gtest/gtest.h>

#include "tests/jobs/job_store_fixture.h"

namespace unmask::jobs::testing {
namespace {

TEST(MemoryJobStoreTest, DescribeSaysJobsDoNotSurviveARestart) {
  MemoryJobStore store;
  EXPECT_NE(store.Describe().find("do not survive a restart"), std::string::npos);
  EXPECT_EQ(store.Describe(), MemoryJobStore::kDescription);
}

TEST(MemoryJobStoreTest, FinishedJobsExpireAfterTheResultTtl) {
  ManualClock clock;
  JobStoreOptions options;
  options.result_ttl_ms = 1000;
  options.clock = clock.AsClock();
  MemoryJobStore store(options);
  JobRecord job;
  job.model = "m";
  auto submitted = store.Submit(job);
  ASSERT_TRUE(submitted.ok());
  EXPECT_EQ(store.ExpiresAtMs(submitted->job_id), std::nullopt);
  auto claimed = store.Claim("c", 0);
  ASSERT_TRUE(claimed.ok() && claimed->has_value());
  ASSERT_TRUE(store.Complete(submitted->job_id, (**claimed).handle, "r").ok());
  EXPECT_EQ(store.ExpiresAtMs(submitted->job_id), clock.Now() + 1000);
  clock.Advance(999);
  EXPECT_TRUE(store.Get(submitted->job_id).ok());
  clock.Advance(1);
  EXPECT_EQ(store.Get(submitted->job_id).status().code(), StatusCode::kNotFound);
}

TEST(MemoryJobStoreTest, HandlesFromAnotherStoreAreRefused) {
  MemoryJobStore store;
  JobRecord job;
  job.model = "m";
  auto submitted = store.Submit(job);
  ASSERT_TRUE(submitted.ok());
  DeliveryHandle forged{submitted->job_id, "memory", "999", "c"};
  EXPECT_EQ(store.Complete(submitted->job_id, forged, "r").code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace unmask::jobs::testing
