// /metrics over HTTPS (--metrics-tls-*, services::StartTelemetry), scraped with cpp-httplib's
// client as Prometheus would over TLS: the certificate verified against the CA; under mutual TLS
// only a client with a certificate from the CA gets the metrics; a renewed certificate reaches new
// connections with --metrics-tls-refresh-seconds; plain HTTP gets nothing and the endpoint goes
// on; bad flags are refused naming the flag.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "services/common/server_runner.h"
#include "tests/tls/test_pki.h"

namespace unmask::services {
namespace {

using ::testing::HasSubstr;
using unmask::testing::Replace;
using unmask::testing::TempDir;
using unmask::testing::TestPki;

const TestPki& Pki() {
  static const TestPki* pki = new TestPki();
  return *pki;
}

telemetry::TelemetryOptions WithMetrics() {
  telemetry::TelemetryOptions t;
  t.service_name = "unmask-test";
  t.metrics_listen = "127.0.0.1:0";
  return t;
}

// GET /metrics over a new connection trusting `ca` (presenting `cert` / `key` when given): the
// status, 0 when the handshake failed; `body` gets the answer.
int Scrape(int port, const std::string& ca, const std::string& cert = "", const std::string& key = "",
           std::string* body = nullptr) {
  httplib::SSLClient client("127.0.0.1", port, cert, key);
  client.set_ca_cert_path(ca.c_str());
  client.enable_server_certificate_verification(true);
  client.set_connection_timeout(5);
  auto res = client.Get("/metrics");
  if (res && body != nullptr) *body = res->body;
  return res ? res->status : 0;
}

class MetricsTlsTest : public ::testing::Test {
 protected:
  std::unique_ptr<telemetry::Telemetry> Start(tls::ServerTlsOptions o) {
    o.flag_prefix = "--metrics-tls-";
    auto t = StartTelemetry("unmask-test", WithMetrics(), {}, o);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(*t) : nullptr;
  }
  TempDir dir_;
  const std::string cert_ = dir_.File("tls.crt"), key_ = dir_.File("tls.key");
};

TEST_F(MetricsTlsTest, ScrapedOverHttpsWithTheCertificateVerified) {
  tls::ServerTlsOptions o;
  o.cert_file = Pki().server_cert();
  o.key_file = Pki().server_key();
  auto t = Start(o);
  ASSERT_NE(t, nullptr);
  std::string body;
  EXPECT_EQ(Scrape(t->metrics_port(), Pki().ca(), "", "", &body), 200);
  EXPECT_THAT(body, HasSubstr("# TYPE unmask_queue_depth gauge"));
  EXPECT_EQ(Scrape(t->metrics_port(), Pki().other_ca()), 0) << "a client that trusts another CA";
  httplib::Client plain("127.0.0.1", t->metrics_port());
  plain.set_connection_timeout(5);
  plain.set_read_timeout(5);
  auto res = plain.Get("/metrics");
  EXPECT_TRUE(!res || res->status != 200) << "plain HTTP gets no metrics";
  EXPECT_EQ(Scrape(t->metrics_port(), Pki().ca()), 200) << "and the endpoint goes on";
}

TEST_F(MetricsTlsTest, MutualTlsServesOnlyClientsOfTheCa) {
  tls::ServerTlsOptions o;
  o.cert_file = Pki().server_cert();
  o.key_file = Pki().server_key();
  o.ca_file = Pki().ca();
  o.require_client_cert = true;
  auto t = Start(o);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(Scrape(t->metrics_port(), Pki().ca(), Pki().client_cert(), Pki().client_key()), 200);
  EXPECT_EQ(Scrape(t->metrics_port(), Pki().ca()), 0) << "no client certificate";
  EXPECT_EQ(Scrape(t->metrics_port(), Pki().ca(), Pki().other_client_cert(), Pki().other_client_key()), 0);
}

TEST_F(MetricsTlsTest, ARenewedCertificateReachesNewConnections) {
  Replace(Pki().server_cert(), cert_);
  Replace(Pki().server_key(), key_);
  tls::ServerTlsOptions o;
  o.cert_file = cert_;
  o.key_file = key_;
  o.refresh_seconds = 1;
  auto t = Start(o);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(Scrape(t->metrics_port(), Pki().ca()), 200);
  Replace(Pki().other_server_key(), key_);
  Replace(Pki().other_server_cert(), cert_);
  int got = 0;
  for (int i = 0; i < 50 && got != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    got = Scrape(t->metrics_port(), Pki().other_ca());
  }
  EXPECT_EQ(got, 200) << "the renewed certificate never reached a new connection";
  EXPECT_EQ(Scrape(t->metrics_port(), Pki().ca()), 0);
}

TEST_F(MetricsTlsTest, BadFlagsAreRefusedByName) {
  tls::ServerTlsOptions o;
  o.flag_prefix = "--metrics-tls-";
  o.cert_file = "/no/such/tls.crt";
  o.key_file = Pki().server_key();
  auto t = StartTelemetry("unmask-test", WithMetrics(), {}, o);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(ExitCodeFor(t.status()), 2);
  EXPECT_THAT(t.status().message(), HasSubstr("--metrics-tls-cert /no/such/tls.crt"));
  o.cert_file = Pki().server_cert();
  telemetry::TelemetryOptions off = WithMetrics();
  off.metrics_listen = "";
  t = StartTelemetry("unmask-test", off, {}, o);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("--metrics-tls-*: given with an empty --metrics-listen"));
}

}  // namespace
}  // namespace unmask::services
