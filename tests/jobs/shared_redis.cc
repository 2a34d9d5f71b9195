#include "tests/jobs/shared_redis.h"

#include <gtest/gtest.h>

#include <memory>

namespace unmask::jobs::testing {
namespace {

std::unique_ptr<RedisServer>& SharedSlot() {
  static std::unique_ptr<RedisServer> server;
  return server;
}

class SharedRedisEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { SharedSlot().reset(); }
};
[[maybe_unused]] ::testing::Environment* const kSharedRedisEnvironment =
    ::testing::AddGlobalTestEnvironment(new SharedRedisEnvironment);

}  // namespace

RedisServer* SharedRedisServer() {
  std::unique_ptr<RedisServer>& slot = SharedSlot();
  if (!slot) {
    StatusOr<std::unique_ptr<RedisServer>> started = RedisServer::Start();
    if (!started.ok()) {
      ADD_FAILURE() << "cannot start redis-server: " << started.status().ToString();
      return nullptr;
    }
    slot = std::move(started).value();
  }
  return slot.get();
}

}  // namespace unmask::jobs::testing
