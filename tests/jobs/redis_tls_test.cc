// Redis over TLS (common/jobs/redis_tls.h) against a real redis-server with its tls-port on (the
// plain port stays for the fixture's own PING): commands and the job store through the bridge,
// the server's certificate checked (CA, name), mutual TLS, a server restart, and every bad file
// or refused handshake named. Certificates from tests/tls/test_pki.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "common/jobs/redis_client.h"
#include "common/jobs/redis_job_store.h"
#include "common/jobs/testing/redis_server.h"
#include "tests/tls/test_pki.h"

namespace unmask::jobs {
namespace {

using ::testing::HasSubstr;

class RedisTlsTest : public ::testing::Test {
 protected:
  // A redis-server whose TLS port asks for client certificates when `mutual`.
  void StartServer(bool mutual) {
    tls_port_ = testing::PickFreePort();
    testing::RedisServerOptions options;
    options.extra_args = {"--tls-port", std::to_string(tls_port_), "--tls-cert-file", pki_.server_cert(),
                          "--tls-key-file", pki_.server_key(), "--tls-ca-cert-file", pki_.ca(),
                          "--tls-auth-clients", mutual ? "yes" : "no"};
    auto started = testing::RedisServer::Start(options);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    server_ = std::move(*started);
  }

  RedisEndpoint Endpoint(const std::string& host = "127.0.0.1") const {
    RedisEndpoint e;
    e.host = host;
    e.port = tls_port_;
    e.tls.enabled = true;
    e.tls.ca_file = pki_.ca();
    return e;
  }

  static std::string Get(RedisClient& client, const std::string& key) {
    auto reply = client.Command({"GET", key});
    return reply.ok() ? ReplyString(reply->get()) : "error: " + reply.status().ToString();
  }

  unmask::testing::TestPki pki_;
  std::unique_ptr<testing::RedisServer> server_;
  int tls_port_ = 0;
};

TEST_F(RedisTlsTest, CommandsAndPipelinesGoThroughTheTlsPort) {
  StartServer(/*mutual=*/false);
  for (const std::string host : {"127.0.0.1", "localhost"}) {  // the certificate names both
    RedisClient client(Endpoint(host), 2);
    ASSERT_TRUE(client.Command({"SET", "k-" + host, std::string("v\0\r\n", 4)}).ok());
    EXPECT_EQ(Get(client, "k-" + host), std::string("v\0\r\n", 4)) << "binary-safe through the bridge";
    auto replies = client.Pipeline({{"INCR", "n"}, {"INCR", "n"}, {"GET", "n"}});
    ASSERT_TRUE(replies.ok()) << replies.status().ToString();
    EXPECT_EQ(ReplyString((*replies)[2].get()), host == "127.0.0.1" ? "2" : "4");
    // A reply larger than one TLS record (16 KiB) comes back whole.
    const std::string big(200000, 'x');
    ASSERT_TRUE(client.Command({"SET", "big", big}).ok());
    EXPECT_EQ(Get(client, "big"), big);
  }
  // A plain client on the TLS port gets nothing it can read.
  RedisEndpoint plain = Endpoint();
  plain.tls.enabled = false;
  plain.io_timeout_ms = 1000;
  RedisClient wrong(plain, 1);
  EXPECT_FALSE(wrong.Command({"PING"}).ok());
}

TEST_F(RedisTlsTest, TheJobStoreRunsOverTls) {
  StartServer(/*mutual=*/false);
  RedisJobStoreOptions options;
  options.endpoint = Endpoint();
  auto store = RedisJobStore::Connect(options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  JobRecord record;
  record.job_id = "job-tls";
  record.model = "m";
  record.payload = "payload";
  auto submitted = (*store)->Submit(record);
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  auto got = (*store)->Get("job-tls");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->payload, "payload");
}

TEST_F(RedisTlsTest, TheServersCertificateMustBeTrustedAndNamed) {
  StartServer(/*mutual=*/false);
  RedisEndpoint other_ca = Endpoint();
  other_ca.tls.ca_file = pki_.other_ca();
  auto c = RedisConnection::Connect(other_ca);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(c.status().message(), HasSubstr("TLS to 127.0.0.1:" + std::to_string(tls_port_)));
  EXPECT_THAT(c.status().message(), HasSubstr("certificate"));
  RedisEndpoint wrong_name = Endpoint();
  wrong_name.tls.server_name = "redis.example.com";
  c = RedisConnection::Connect(wrong_name);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("redis.example.com"));
  wrong_name.tls.server_name = "localhost";  // a name the certificate carries, on an IP host
  EXPECT_TRUE(RedisConnection::Connect(wrong_name).ok());
}

TEST_F(RedisTlsTest, MutualTlsNeedsTheClientCertificate) {
  StartServer(/*mutual=*/true);
  RedisEndpoint e = Endpoint();
  e.io_timeout_ms = 500;
  // TLS 1.3: a refused client certificate may surface at the first command, not the handshake.
  auto without = RedisConnection::Connect(e);
  if (without.ok()) {
    EXPECT_FALSE((*without)->Command({"PING"}).ok());
  }
  e.tls.cert_file = pki_.client_cert();
  e.tls.key_file = pki_.client_key();
  RedisClient client(e, 1);
  auto pong = client.Command({"PING"});
  ASSERT_TRUE(pong.ok()) << pong.status().ToString();
  EXPECT_EQ(ReplyString(pong->get()), "PONG");
  e.tls.cert_file = pki_.other_client_cert();  // from a CA the server does not trust
  e.tls.key_file = pki_.other_client_key();
  auto untrusted = RedisConnection::Connect(e);
  if (untrusted.ok()) {
    EXPECT_FALSE((*untrusted)->Command({"PING"}).ok());
  }
}

TEST_F(RedisTlsTest, ARestartedServerIsReachedAgainOnAFreshConnection) {
  StartServer(/*mutual=*/false);
  RedisClient client(Endpoint(), 2);
  ASSERT_TRUE(client.Command({"SET", "a", "1"}).ok());
  ASSERT_TRUE(server_->Restart().ok());
  auto after = client.Command({"PING"});  // the pooled connection is dead: retried on a new one
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(ReplyString(after->get()), "PONG");
}

TEST_F(RedisTlsTest, BadFilesAreNamed) {
  RedisTlsOptions tls;
  tls.enabled = true;
  tls.ca_file = pki_.File("missing.crt");
  Status s = CheckRedisTls(tls);
  EXPECT_EQ(s.field(), "ca_file");
  EXPECT_THAT(s.message(), HasSubstr("missing.crt: cannot read it"));
  std::ofstream(pki_.File("garbage.pem")) << "not a certificate\n";
  tls.ca_file = pki_.File("garbage.pem");
  s = CheckRedisTls(tls);
  EXPECT_EQ(s.field(), "ca_file");
  EXPECT_THAT(s.message(), HasSubstr("garbage.pem: cannot load it"));
  tls.ca_file = pki_.ca();
  tls.cert_file = pki_.client_cert();
  s = CheckRedisTls(tls);
  EXPECT_EQ(s.field(), "key_file") << "a certificate without its key";
  tls.key_file = pki_.server_key();  // another certificate's key
  s = CheckRedisTls(tls);
  EXPECT_EQ(s.field(), "key_file");
  EXPECT_THAT(s.message(), HasSubstr("does not fit"));
  tls.key_file = pki_.client_key();
  EXPECT_TRUE(CheckRedisTls(tls).ok());
  EXPECT_TRUE(CheckRedisTls(RedisTlsOptions{}).ok()) << "TLS off checks nothing";
  // Nothing listens: refused, named.
  RedisEndpoint nobody;
  nobody.port = testing::PickFreePort();
  nobody.tls = tls;
  auto c = RedisConnection::Connect(nobody);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("TLS to 127.0.0.1:" + std::to_string(nobody.port)));
}

}  // namespace
}  // namespace unmask::jobs
