// Spans to the OTLP receiver over TLS (--otlp-tls-*, services::StartTelemetry): a real gRPC
// trace receiver serving mutual TLS with the test PKI gets the spans of a service whose flags
// name the CA and its client certificate; without them the exporter cannot reach it (counted as
// export errors, the service unharmed); bad flags are refused naming the flag.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "services/common/grpc_tls.h"
#include "services/common/server_runner.h"
#include "tests/telemetry/test_collector.h"
#include "tests/tls/test_pki.h"

namespace unmask::services {
namespace {

using ::testing::HasSubstr;
using telemetry::testing::TestCollector;
using unmask::testing::TestPki;

const TestPki& Pki() {
  static const TestPki* pki = new TestPki();
  return *pki;
}

// A receiver that serves TLS with the server certificate and requires a client certificate
// from the PKI's CA.
std::shared_ptr<grpc::ServerCredentials> MutualTls() {
  tls::ServerTlsOptions o;
  o.cert_file = Pki().server_cert();
  o.key_file = Pki().server_key();
  o.ca_file = Pki().ca();
  o.require_client_cert = true;
  auto material = tls::LoadServerTls(o);
  EXPECT_TRUE(material.ok()) << material.status().ToString();
  return tls::ServerCredentials(*material);
}

telemetry::TelemetryOptions Traced(const std::string& endpoint) {
  telemetry::TelemetryOptions t;
  t.otlp_endpoint = endpoint;
  t.service_name = "unmask-test";
  t.trace_flush_interval_ms = 50;
  return t;
}

tls::ClientTlsOptions OtlpTls() {
  tls::ClientTlsOptions o;
  o.flag_prefix = "--otlp-tls-";
  o.ca_file = Pki().ca();
  o.cert_file = Pki().client_cert();
  o.key_file = Pki().client_key();
  return o;
}

void SendOneSpan(telemetry::Telemetry& t) {
  telemetry::Span span = t.tracer().StartSpan("otlp.tls.test", telemetry::SpanKind::kServer);
  span.SetOk();
}

TEST(OtlpTls, SpansReachAReceiverThatRequiresAClientCertificate) {
  TestCollector collector(MutualTls());
  auto t = StartTelemetry("unmask-test", Traced(collector.endpoint()), OtlpTls());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  SendOneSpan(**t);
  ASSERT_TRUE((*t)->exporter()->Flush(std::chrono::seconds(20)));
  ASSERT_TRUE(collector.WaitForSpans(1, std::chrono::seconds(20)));
  EXPECT_EQ(collector.spans()[0].span.name(), "otlp.tls.test");
  EXPECT_EQ(collector.spans()[0].service, "unmask-test");
  EXPECT_EQ((*t)->exporter()->export_errors(), 0u);
}

TEST(OtlpTls, WithoutTheFlagsTheSpansCannotReachIt) {
  TestCollector collector(MutualTls());
  for (const bool with_ca_only : {false, true}) {
    tls::ClientTlsOptions o;
    o.flag_prefix = "--otlp-tls-";
    if (with_ca_only) o.ca_file = Pki().ca();  // TLS, but no client certificate
    auto t = StartTelemetry("unmask-test", Traced(collector.endpoint()), o);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    SendOneSpan(**t);
    (*t)->exporter()->Flush(std::chrono::seconds(20));
    EXPECT_GE((*t)->exporter()->export_errors(), 1u) << with_ca_only;
    EXPECT_EQ(collector.span_count(), 0u) << with_ca_only;
  }
}

TEST(OtlpTls, BadFlagsAreRefusedByName) {
  tls::ClientTlsOptions missing = OtlpTls();
  missing.ca_file = "/no/such/ca.crt";
  auto t = StartTelemetry("unmask-test", Traced("127.0.0.1:4317"), missing);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(ExitCodeFor(t.status()), 2);
  EXPECT_THAT(t.status().message(), HasSubstr("--otlp-tls-ca /no/such/ca.crt"));
  t = StartTelemetry("unmask-test", Traced(""), OtlpTls());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(ExitCodeFor(t.status()), 2);
  EXPECT_THAT(t.status().message(), HasSubstr("--otlp-tls-*: given without --otlp-endpoint"));
  t = StartTelemetry("unmask-test", Traced("https://jaeger:4317"), {});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("TLS to the receiver is --otlp-tls"));
}

}  // namespace
}  // namespace unmask::services
