// The metrics endpoint in a process whose static TLS is large, as in the executor and the
// scheduler (LibTorch pulls in OpenBLAS and glog, over 100 KiB of thread-local storage). glibc
// refuses to start a thread whose requested stack cannot hold the static TLS; civetweb (which
// prometheus-cpp's Exposer uses) asks for 100 KiB stacks, so it failed there with "null context
// when constructing CivetServer". This binary has 512 KiB of TLS of its own. Its own executable
// because that TLS is in every thread of the process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/telemetry/metrics.h"
#include "tests/telemetry/test_collector.h"

// External linkage, so that it stays: the executable's TLS block is always in the static TLS.
thread_local char g_large_tls[512 << 10];

namespace unmask::telemetry {
namespace {

using ::testing::HasSubstr;
using testing::HttpGet;

TEST(MetricsExposerTls, ServesFromAProcessWithLargeStaticTls) {
  g_large_tls[0] = 1;
  ServiceMetrics metrics;
  metrics.SetQueueDepth(3);
  auto exposer = MetricsExposer::Start("127.0.0.1:0");
  ASSERT_TRUE(exposer.ok()) << exposer.status().ToString();
  (*exposer)->Register(metrics);
  const auto resp = HttpGet((*exposer)->port(), "/metrics");
  ASSERT_EQ(resp.status, 200);
  EXPECT_THAT(resp.body, HasSubstr("unmask_queue_depth 3"));
}

TEST(MetricsExposerTls, AnswersHeadAndQueriesAndRefusesOtherMethods) {
  ServiceMetrics metrics;
  auto exposer = MetricsExposer::Start("127.0.0.1:0");
  ASSERT_TRUE(exposer.ok()) << exposer.status().ToString();
  (*exposer)->Register(metrics);
  EXPECT_EQ(HttpGet((*exposer)->port(), "/metrics?x=1").status, 200);
  EXPECT_EQ(HttpGet((*exposer)->port(), "/").status, 404);
}

TEST(MetricsExposerTls, RefusesABadListenAddress) {
  auto bad = MetricsExposer::Start("127.0.0.1:http");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  auto unknown = MetricsExposer::Start("no-such-host.invalid:0");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace unmask::telemetry
