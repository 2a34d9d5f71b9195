// ExecutorPool's view of an executor's slots, against a real gRPC server on port 0 that answers
// GetCapacity: a job counts from its dispatch, and its slot is free again as soon as it ends
// (NoteFinished), not at the next capacity poll; a dispatcher waiting for room wakes then.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "services/scheduler/dispatch_policy.h"
#include "services/scheduler/executor_pool.h"
#include "unmask/v1/executor.grpc.pb.h"

namespace unmask::scheduler {
namespace {

// An executor with two slots and nothing running, as its capacity poll says.
class TwoSlotExecutor final : public v1::Executor::Service {
  grpc::Status GetCapacity(grpc::ServerContext*, const v1::GetCapacityRequest*, v1::Capacity* out) override {
    out->set_executor_id("two-slots");
    out->add_models("m");
    out->set_max_concurrent_jobs(2);
    return grpc::Status::OK;
  }
};

class ExecutorPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    address_ = "127.0.0.1:" + std::to_string(port);
    ExecutorPoolOptions options;
    options.addresses = {address_};
    pool_ = std::make_unique<ExecutorPool>(options);
    pool_->PollOnce();  // one poll, no poller: the counts after it are the pool's own
  }
  void TearDown() override {
    pool_.reset();
    if (server_) server_->Shutdown();
  }
  int Pick() { return dispatcher_.Pick(pool_->Snapshot(), "m"); }

  TwoSlotExecutor service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::unique_ptr<ExecutorPool> pool_;
  Dispatcher dispatcher_{DispatchPolicy::kLeastBusy, 0};
};

TEST_F(ExecutorPoolTest, AFinishedJobsSlotIsFreeBeforeTheNextPoll) {
  ASSERT_EQ(Pick(), 0);
  pool_->NoteDispatched(address_);
  pool_->NoteDispatched(address_);
  EXPECT_EQ(pool_->Snapshot()[0].running, 2);
  EXPECT_EQ(Pick(), -1) << "both slots taken";
  pool_->NoteFinished(address_);
  EXPECT_EQ(pool_->Snapshot()[0].running, 1);
  EXPECT_EQ(Pick(), 0) << "the finished job's slot, without waiting for a poll";
  pool_->NoteFinished(address_);
  pool_->NoteFinished(address_);  // one more than was counted (a poll may have dropped it): never below 0
  EXPECT_EQ(pool_->Snapshot()[0].running, 0);
  pool_->NoteFinished("127.0.0.1:1");  // an executor the pool does not know: nothing happens
  EXPECT_EQ(pool_->Snapshot().size(), 1u);
}

TEST_F(ExecutorPoolTest, AWaitForRoomEndsWhenAJobFinishes) {
  pool_->NoteDispatched(address_);
  pool_->NoteDispatched(address_);
  auto waiter = std::async(std::launch::async, [&] { pool_->WaitForRoom(std::chrono::minutes(10)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout) << "nothing changed yet";
  pool_->NoteFinished(address_);
  EXPECT_EQ(waiter.wait_for(std::chrono::minutes(1)), std::future_status::ready) << "not woken by the finished job";
}

// The claim loop takes a job from the queue only while an executor has room (or none is healthy,
// when placement waits for one and watches the job's deadline).
TEST(MayClaimTest, OnlyWhileSomeHealthyExecutorHasRoom) {
  Dispatcher dispatcher(DispatchPolicy::kLeastBusy, 0);
  ExecutorSnapshot full, free_one, down;
  full.healthy = free_one.healthy = true;
  full.max_concurrent = free_one.max_concurrent = 8;
  full.running = 6;
  full.queued = 2;
  free_one.running = 7;
  down.healthy = false;
  EXPECT_TRUE(dispatcher.MayClaim({}));
  EXPECT_TRUE(dispatcher.MayClaim({down}));
  EXPECT_FALSE(dispatcher.MayClaim({full, down}));
  EXPECT_TRUE(dispatcher.MayClaim({full, free_one}));
  Dispatcher limited(DispatchPolicy::kLeastBusy, 4);  // --per-executor-limit below the executor's own
  EXPECT_FALSE(limited.MayClaim({free_one}));
  // Jobs taken and not yet sent hold the free slots: one free slot admits one such job, not two.
  EXPECT_TRUE(dispatcher.MayClaim({full, free_one}, 0));
  EXPECT_FALSE(dispatcher.MayClaim({full, free_one}, 1));
  free_one.running = 5;  // three free
  EXPECT_TRUE(dispatcher.MayClaim({full, free_one}, 2));
  EXPECT_FALSE(dispatcher.MayClaim({full, free_one}, 3));
  EXPECT_TRUE(dispatcher.MayClaim({down}, 100)) << "with none healthy, placement waits for one";
}

}  // namespace
}  // namespace unmask::scheduler
