// What only the Redis store has: key TTLs seen through the TTL command, the consumer group's
// pending list, the dead-letter stream, corrupt records written with raw commands, a restart
// of the server with AOF, and an unreachable server.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/jobs/job_store_fixture.h"

namespace unmask::jobs::testing {
namespace {

class RedisJobStoreTest : public JobStoreTest<RedisBackend> {
 protected:
  RedisJobStore& redis() { return static_cast<RedisJobStore&>(store()); }

  // A raw command on the test's own connection.
  RedisReplyPtr Raw(const std::vector<std::string>& argv) {
    auto reply = redis().client().Command(argv);
    EXPECT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_FALSE(reply.ok() && IsErrorReply(reply->get())) << ReplyString(reply->get());
    return reply.ok() ? std::move(reply).value() : nullptr;
  }
  long long RawInt(const std::vector<std::string>& argv) {
    RedisReplyPtr reply = Raw(argv);
    return reply && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -999;
  }
};

TEST_F(RedisJobStoreTest, DescribeNamesTheServer) {
  EXPECT_NE(store().Describe().find("127.0.0.1:" + std::to_string(backend_.server->port())),
            std::string::npos);
}

TEST_F(RedisJobStoreTest, ResultTtlIsSetOnTheRecordAndTheEventLog) {
  const std::string id = MustSubmit(NewJob());
  ASSERT_TRUE(store().AppendEvent(id, "step").ok());
  EXPECT_EQ(RawInt({"PTTL", redis().JobKey(id)}), -1) << "a queued job must not expire";
  EXPECT_EQ(RawInt({"PTTL", redis().EventsKey(id)}), -1);
  ClaimedJob claimed = MustClaim();
  ASSERT_TRUE(store().Complete(id, claimed.handle, "r").ok());
  const long long job_ttl = RawInt({"PTTL", redis().JobKey(id)});
  const long long events_ttl = RawInt({"PTTL", redis().EventsKey(id)});
  EXPECT_GT(job_ttl, kTtlMs - 10'000);
  EXPECT_LE(job_ttl, kTtlMs);
  EXPECT_GT(events_ttl, kTtlMs - 10'000);
  EXPECT_LE(events_ttl, kTtlMs);
  EXPECT_GT(RawInt({"TTL", redis().JobKey(id)}), 0);
}

TEST_F(RedisJobStoreTest, DefaultResultTtlIsOneDay) {
  RedisJobStoreOptions options;
  options.endpoint = backend_.Endpoint();
  auto defaults = RedisJobStore::Connect(options);
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  auto submitted = (*defaults)->Submit(NewJob());
  ASSERT_TRUE(submitted.ok());
  auto claimed = (*defaults)->Claim("c", 0);
  ASSERT_TRUE(claimed.ok() && claimed->has_value());
  ASSERT_TRUE((*defaults)->Complete(submitted->job_id, (**claimed).handle, "r").ok());
  const long long ttl = RawInt({"TTL", redis().JobKey(submitted->job_id)});
  EXPECT_GT(ttl, 24 * 3600 - 60);
  EXPECT_LE(ttl, 24 * 3600);
}

TEST_F(RedisJobStoreTest, DeliveryStaysPendingUntilTheResultIsStored) {
  const std::string id = MustSubmit(NewJob("m", 4));
  ClaimedJob claimed = MustClaim();
  EXPECT_EQ(claimed.handle.queue, redis().PriorityStreamKey(4));
  RedisReplyPtr pending = Raw({"XPENDING", claimed.handle.queue, "schedulers"});
  ASSERT_TRUE(pending);
  EXPECT_EQ(ReplyElement(pending.get(), 0)->integer, 1);
  ASSERT_TRUE(store().Complete(id, claimed.handle, "r").ok());
  pending = Raw({"XPENDING", claimed.handle.queue, "schedulers"});
  EXPECT_EQ(ReplyElement(pending.get(), 0)->integer, 0);
  EXPECT_EQ(RawInt({"XLEN", claimed.handle.queue}), 0) << "acknowledged entries are deleted";
}

TEST_F(RedisJobStoreTest, DeadLetterStreamRecordsTheJobAndTheReason) {
  const std::string id = MustSubmit(NewJob());
  ClaimedJob claimed = MustClaim("dies");
  auto report = store().ReclaimStale("reaper", 0, 1);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->dead, std::vector<std::string>{id});
  RedisReplyPtr dead = Raw({"XRANGE", redis().DeadLetterKey(), "-", "+"});
  ASSERT_EQ(ReplyArraySize(dead.get()), 1u);
  const redisReply* fields = ReplyElement(ReplyElement(dead.get(), 0), 1);
  EXPECT_EQ(ReplyString(ReplyElement(fields, 0)), "job");
  EXPECT_EQ(ReplyString(ReplyElement(fields, 1)), id);
  EXPECT_NE(ReplyString(ReplyElement(fields, 3)).find("executor lost 1 times"), std::string::npos);
}

TEST_F(RedisJobStoreTest, CorruptFieldsAreDataLossNamingTheJobAndTheField) {
  struct Case {
    std::string field, value;
  };
  for (const Case& c :
       {Case{"priority", "banana"}, Case{"state", "exploded"}, Case{"attempts", "-3"},
        Case{"created_ms", "12x"}, Case{"cancel_requested", "maybe"}, Case{"id", "someone-else"},
        Case{"error_code", "13x"}, Case{"error_metadata", "{\"limit\":"}}) {
    const std::string id = MustSubmit(NewJob());
    Raw({"HSET", redis().JobKey(id), c.field, c.value});
    auto got = store().Get(id);
    EXPECT_EQ(got.status().code(), StatusCode::kDataLoss) << c.field;
    EXPECT_NE(got.status().message().find("job " + id), std::string::npos)
        << got.status().message();
    EXPECT_NE(got.status().message().find("'" + c.field + "'"), std::string::npos)
        << got.status().message();
    EXPECT_EQ(store().List({std::nullopt, 50}).status().code(), StatusCode::kDataLoss);
    Raw({"DEL", redis().JobKey(id)});
  }
  const std::string id = MustSubmit(NewJob());
  Raw({"HDEL", redis().JobKey(id), "model"});
  auto missing = store().Get(id);
  EXPECT_EQ(missing.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(missing.status().message().find("'model' is missing"), std::string::npos)
      << missing.status().message();
}

// A failure's code and detail are hash fields that another replica (or a restarted scheduler)
// reads back; a record stored before they were kept reads as INTERNAL with its message.
TEST_F(RedisJobStoreTest, AFailuresCodeAndDetailAreInTheHashAndOldRecordsStillRead) {
  const std::string id = MustSubmit(NewJob());
  ClaimedJob claimed = MustClaim();
  const Status error = InvalidFieldError("params.steps", "must be <= gen_length (8), got 16")
                           .WithReason("INVALID_VALUE", {{"limit", "8"}});
  ASSERT_TRUE(store().Fail(id, claimed.handle, error).ok());
  RedisReplyPtr code = Raw({"HGET", redis().JobKey(id), "error_code"});
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(ReplyString(code.get()), "3");
  RedisReplyPtr metadata = Raw({"HGET", redis().JobKey(id), "error_metadata"});
  ASSERT_NE(metadata, nullptr);
  EXPECT_EQ(ReplyString(metadata.get()), "{\"limit\":\"8\"}");
  auto read = replica().Get(id);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(ErrorOf(*read).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorOf(*read).field(), "params.steps");
  EXPECT_EQ(ErrorOf(*read).reason(), "INVALID_VALUE");
  EXPECT_EQ(read->error_detail.metadata.at("limit"), "8");

  Raw({"HDEL", redis().JobKey(id), "error_code", "error_field", "error_reason", "error_metadata"});
  auto old = replica().Get(id);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->error_code, std::nullopt);
  EXPECT_EQ(ErrorOf(*old).code(), StatusCode::kInternal);
  EXPECT_EQ(ErrorOf(*old).message(), error.message());
  EXPECT_EQ(ErrorOf(*old).detail(), nullptr);
}

TEST_F(RedisJobStoreTest, ACorruptQueuedJobIsBuriedAndDoesNotBlockTheQueue) {
  const std::string bad = MustSubmit(NewJob("m", 5));
  const std::string good = MustSubmit(NewJob("m", 0));
  Raw({"HSET", redis().JobKey(bad), "attempts", "many"});
  auto claimed = store().Claim("c", 0);
  EXPECT_EQ(claimed.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(claimed.status().message().find("job " + bad), std::string::npos);
  EXPECT_NE(claimed.status().message().find("'attempts'"), std::string::npos);
  EXPECT_NE(claimed.status().message().find("dead letters"), std::string::npos);
  EXPECT_EQ(RawInt({"XLEN", redis().DeadLetterKey()}), 1);
  EXPECT_EQ(MustClaim().record.job_id, good);

  // A record replaced by another type is reported too, and skipped.
  const std::string wrong_type = MustSubmit(NewJob("m", 1));
  const std::string next = MustSubmit(NewJob("m", 0));
  Raw({"DEL", redis().JobKey(wrong_type)});
  Raw({"SET", redis().JobKey(wrong_type), "garbage"});
  EXPECT_EQ(store().Get(wrong_type).status().code(), StatusCode::kDataLoss);
  auto skipped = store().Claim("c", 0);
  EXPECT_EQ(skipped.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(skipped.status().message().find(wrong_type), std::string::npos);
  EXPECT_EQ(MustClaim().record.job_id, next);
}

TEST_F(RedisJobStoreTest, UnreachableServerIsUnavailableNamingTheCommand) {
  RedisJobStoreOptions options;
  options.endpoint.port = PickFreePort();
  options.endpoint.connect_timeout_ms = 500;
  auto none = RedisJobStore::Connect(options);
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(none.status().message().find("redis connect"), std::string::npos);
}

// A redis-server with the append-only file on (and `extra_args`), and a store connected to it.
void StartAofServerAndStore(std::vector<std::string> extra_args, std::unique_ptr<RedisServer>* server,
                            std::unique_ptr<RedisJobStore>* store) {
  RedisServerOptions server_options;
  server_options.append_only = true;
  server_options.extra_args = std::move(extra_args);
  auto started = RedisServer::Start(server_options);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  *server = std::move(*started);
  RedisJobStoreOptions options;
  options.endpoint.port = (*server)->port();
  auto connected = RedisJobStore::Connect(options);
  ASSERT_TRUE(connected.ok()) << connected.status().ToString();
  *store = std::move(*connected);
}

// A queued job survives a crash of Redis when AOF is on; the same store object reconnects.
TEST(RedisRestartTest, QueuedJobSurvivesARestartWithAppendOnlyFile) {
  std::unique_ptr<RedisServer> server;
  std::unique_ptr<RedisJobStore> store;
  ASSERT_NO_FATAL_FAILURE(StartAofServerAndStore({}, &server, &store));

  JobRecord job;
  job.model = "llada-8b";
  job.payload = "request";
  job.priority = 2;
  job.idempotency_key = "survivor";
  auto submitted = store->Submit(job);
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();

  server->Kill();  // SIGKILL: only what reached the AOF survives
  auto down = store->Get(submitted->job_id);
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(down.status().message().find("redis"), std::string::npos) << down.status().message();
  ASSERT_TRUE(server->Restart().ok());

  auto after = store->Get(submitted->job_id);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->state, JobState::kQueued);
  EXPECT_EQ(after->payload, "request");
  auto duplicate = store->Submit(job);
  ASSERT_TRUE(duplicate.ok()) << duplicate.status().ToString();
  EXPECT_TRUE(duplicate->duplicate);
  EXPECT_EQ(*store->QueueDepth(), 1);
  auto claimed = store->Claim("after-restart", 0);
  ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
  ASSERT_TRUE(claimed->has_value());
  EXPECT_EQ((*claimed)->record.job_id, submitted->job_id);
  EXPECT_TRUE(store->Complete(submitted->job_id, (*claimed)->handle, "done").ok());
}

// While a restarted Redis reads its AOF it refuses commands with LOADING. That is Unavailable
// (try again), not a corrupt record: the chaos test saw a client's Watch give up with DATA_LOSS
// ("stored record is not a hash") on a job that went on to succeed.
TEST(RedisRestartTest, AServerStillLoadingItsAofIsUnavailableNotDataLoss) {
  std::unique_ptr<RedisServer> server;
  std::unique_ptr<RedisJobStore> store;
  // 50 us per key while loading, and clients served meanwhile: the 30,000 filler keys below
  // keep it loading for about 1.5 s.
  ASSERT_NO_FATAL_FAILURE(StartAofServerAndStore(
      {"--key-load-delay", "50", "--loading-process-events-interval-bytes", "1024"}, &server, &store));
  JobRecord job;
  job.model = "m";
  auto submitted = store->Submit(job);
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  for (int i = 0; i < 30; ++i) {
    auto filled = store->client().Command(
        {"EVAL", "for i = 1, 1000 do redis.call('SET', 'filler:' .. ARGV[1] .. ':' .. i, 'x') end", "0",
         std::to_string(i)});
    ASSERT_TRUE(filled.ok()) << filled.status().ToString();
  }

  server->Kill();
  ASSERT_TRUE(server->Restart(/*wait_until_loaded=*/false).ok());
  const std::string& id = submitted->job_id;
  auto during = store->Get(id);
  EXPECT_EQ(during.status().code(), StatusCode::kUnavailable) << during.status().ToString();
  EXPECT_NE(during.status().message().find("LOADING"), std::string::npos) << during.status().message();
  EXPECT_EQ(store->CancelRequested(id).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store->Position(id).status().code(), StatusCode::kUnavailable);

  StatusOr<JobRecord> after = during;
  for (int i = 0; i < 200 && !after.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling for the end of loading
    after = store->Get(id);
  }
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->state, JobState::kQueued);
}

// A server without persistence comes back empty: the consumer groups are gone too, and the
// store recreates them instead of failing every claim with NOGROUP.
TEST(RedisRestartTest, ConsumerGroupsAreRecreatedAfterAnEmptyRestart) {
  auto server = RedisServer::Start();
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  RedisJobStoreOptions options;
  options.endpoint.port = (*server)->port();
  auto store = RedisJobStore::Connect(options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  JobRecord job;
  job.model = "m";
  ASSERT_TRUE((*store)->Submit(job).ok());
  ASSERT_TRUE((*server)->Restart().ok());

  EXPECT_EQ(*(*store)->QueueDepth(), 0) << "nothing persisted";
  auto submitted = (*store)->Submit(job);
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  auto claimed = (*store)->Claim("c", 0);
  ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
  ASSERT_TRUE(claimed->has_value());
  EXPECT_EQ((*claimed)->record.job_id, submitted->job_id);
}

}  // namespace
}  // namespace unmask::jobs::testing
