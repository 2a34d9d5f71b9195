// The redis-server shared by the Redis cases of one test binary.
#pragma once

#include "common/jobs/testing/redis_server.h"

namespace unmask::jobs::testing {

// Started on first use, stopped when the test run ends (a GoogleTest environment). Returns
// null, and records a test failure, when redis-server cannot start.
RedisServer* SharedRedisServer();

}  // namespace unmask::jobs::testing
