// The one host:port parser: good addresses, and every kind of bad one refused with a reason.
#include "common/util/host_port.h"

#include <gtest/gtest.h>

namespace unmask {
namespace {

TEST(HostPort, ParsesHostAndPort) {
  auto hp = ParseHostPort("redis.internal:6380");
  ASSERT_TRUE(hp.ok()) << hp.status().ToString();
  EXPECT_EQ(hp->host, "redis.internal");
  EXPECT_EQ(hp->port, 6380);
  EXPECT_EQ(hp->ToString(), "redis.internal:6380");
  auto zero = ParseHostPort("127.0.0.1:0");
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->port, 0);
  EXPECT_EQ(ParseHostPort("h:65535")->port, 65535);
}

TEST(HostPort, Ipv6InBrackets) {
  auto hp = ParseHostPort("[::1]:50051");
  ASSERT_TRUE(hp.ok()) << hp.status().ToString();
  EXPECT_EQ(hp->host, "::1");
  EXPECT_EQ(hp->port, 50051);
  EXPECT_EQ(hp->ToString(), "[::1]:50051");
  auto no_port = ParseHostPort("[fe80::1]", {6379});
  ASSERT_TRUE(no_port.ok());
  EXPECT_EQ(no_port->host, "fe80::1");
  EXPECT_EQ(no_port->port, 6379);
}

TEST(HostPort, RefusesBadInput) {
  auto refused = [](std::string_view text, const HostPortRules& rules = {}) {
    auto hp = ParseHostPort(text, rules);
    EXPECT_FALSE(hp.ok()) << text << " gave " << (hp.ok() ? hp->ToString() : "");
    if (!hp.ok()) {
      EXPECT_EQ(hp.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(hp.status().message().find(std::string(text)), std::string::npos) << hp.status().message();
    }
    return hp.ok() ? std::string() : hp.status().message();
  };
  EXPECT_NE(refused("").find("empty"), std::string::npos);
  EXPECT_NE(refused("localhost").find("no port"), std::string::npos);
  EXPECT_NE(refused("localhost:").find("no port"), std::string::npos);
  EXPECT_NE(refused("localhost:65536").find("out of range"), std::string::npos);
  EXPECT_NE(refused("localhost:999999").find("out of range"), std::string::npos);
  EXPECT_NE(refused("localhost:http").find("not a number"), std::string::npos);
  EXPECT_NE(refused("localhost:-1").find("not a number"), std::string::npos);
  EXPECT_NE(refused(":6379").find("no host"), std::string::npos);
  EXPECT_NE(refused("::1:80").find("brackets"), std::string::npos);
  EXPECT_NE(refused("[::1").find("]"), std::string::npos);
  EXPECT_NE(refused("[]:80").find("empty"), std::string::npos);
  EXPECT_NE(refused("[::1]x80").find("after"), std::string::npos);
  refused("[::1]:");
  refused("9091");  // a bare port only where the rules allow it
}

TEST(HostPort, RulesForListenersAndDefaults) {
  HostPortRules listen;
  listen.allow_empty_host = true;
  listen.allow_bare_port = true;
  auto bare = ParseHostPort("9091", listen);
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(bare->host, "");
  EXPECT_EQ(bare->port, 9091);
  auto empty_host = ParseHostPort(":9091", listen);
  ASSERT_TRUE(empty_host.ok());
  EXPECT_EQ(empty_host->host, "");
  EXPECT_FALSE(ParseHostPort("70000", listen).ok());

  HostPortRules redis;
  redis.default_port = 6379;
  auto host_only = ParseHostPort("redis", redis);
  ASSERT_TRUE(host_only.ok());
  EXPECT_EQ(host_only->host, "redis");
  EXPECT_EQ(host_only->port, 6379);
  EXPECT_FALSE(ParseHostPort("redis:x", redis).ok());
}

}  // namespace
}  // namespace unmask
