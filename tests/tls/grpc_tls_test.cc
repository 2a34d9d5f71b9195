// gRPC over TLS in process: a ServerRunner (health service) with the credentials the services
// make, and clients with and without the right certificates. Under mutual TLS a client
// without a certificate, or with one from another CA, is refused during the handshake
// (UNAVAILABLE) and the server keeps serving the clients that have one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "grpc/health/v1/health.grpc.pb.h"
#include "services/common/grpc_tls.h"
#include "services/common/server_runner.h"
#include "tests/tls/test_pki.h"

namespace unmask::tls {
namespace {

using unmask::testing::Replace;
using unmask::testing::TestPki;

class GrpcTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new TestPki(); }
  static void TearDownTestSuite() { delete pki_; }
  static const TestPki& pki() { return *pki_; }

  void Serve(bool require_client_cert) {
    ServerTlsOptions o;
    o.cert_file = pki().server_cert();
    o.key_file = pki().server_key();
    if (require_client_cert) {
      o.ca_file = pki().ca();
      o.require_client_cert = true;
    }
    Serve(o);
  }
  void Serve(const ServerTlsOptions& o) {
    auto tls = LoadServerTls(o);
    ASSERT_TRUE(tls.ok()) << tls.status().ToString();
    runner_ = std::make_unique<services::ServerRunner>("Test");
    runner_->SetTls(*tls);
    ASSERT_TRUE(runner_->Start("127.0.0.1:0").ok());
    runner_->SetServing(true);
  }
  void TearDown() override {
    if (runner_) runner_->Drain(std::chrono::seconds(1));
  }

  // The client side: CA, client certificate (cert_file empty: none), server name.
  static std::optional<ClientTlsMaterial> Client(const std::string& ca, const std::string& cert = "",
                                                 const std::string& key = "", const std::string& server_name = "",
                                                 int refresh_seconds = 0) {
    ClientTlsOptions o;
    o.enabled = true;
    o.ca_file = ca;
    o.cert_file = cert;
    o.key_file = key;
    o.server_name = server_name;
    o.refresh_seconds = refresh_seconds;
    auto tls = LoadClientTls(o);
    EXPECT_TRUE(tls.ok()) << tls.status().ToString();
    return tls.ok() ? *tls : std::nullopt;
  }

  // A health check over a fresh channel; the status code of the call.
  grpc::StatusCode Check(const std::optional<ClientTlsMaterial>& tls, const std::string& host = "127.0.0.1") {
    auto stub = grpc::health::v1::Health::NewStub(CreateChannel(host + ":" + std::to_string(runner_->port()), tls));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::health::v1::HealthCheckResponse response;
    const grpc::Status s = stub->Check(&ctx, grpc::health::v1::HealthCheckRequest(), &response);
    if (s.ok()) {
      EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
    }
    return s.error_code();
  }

  // Check, again every 200 ms until it gives `want` (at most 10 s); the last code.
  grpc::StatusCode Await(const std::optional<ClientTlsMaterial>& tls, grpc::StatusCode want) {
    grpc::StatusCode got = Check(tls);
    for (int i = 0; i < 50 && got != want; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      got = Check(tls);
    }
    return got;
  }

  static TestPki* pki_;
  std::unique_ptr<services::ServerRunner> runner_;
};
TestPki* GrpcTlsTest::pki_ = nullptr;

TEST_F(GrpcTlsTest, PlaintextIsTheDefault) {
  runner_ = std::make_unique<services::ServerRunner>("Test");
  ASSERT_TRUE(runner_->Start("127.0.0.1:0").ok());
  runner_->SetServing(true);
  EXPECT_EQ(Check(std::nullopt), grpc::StatusCode::OK);
  EXPECT_EQ(Check(Client(pki().ca())), grpc::StatusCode::UNAVAILABLE) << "a TLS client does not talk to plaintext";
}

TEST_F(GrpcTlsTest, TlsServesClientsThatTrustTheCa) {
  Serve(/*require_client_cert=*/false);
  EXPECT_EQ(Check(Client(pki().ca())), grpc::StatusCode::OK);
  EXPECT_EQ(Check(Client(pki().ca()), "localhost"), grpc::StatusCode::OK);
  EXPECT_EQ(Check(Client(pki().ca(), pki().client_cert(), pki().client_key())), grpc::StatusCode::OK)
      << "a client certificate the server did not ask for does no harm";
  EXPECT_EQ(Check(std::nullopt), grpc::StatusCode::UNAVAILABLE) << "plaintext against a TLS server";
  EXPECT_EQ(Check(Client(pki().other_ca())), grpc::StatusCode::UNAVAILABLE) << "a server the client does not trust";
}

TEST_F(GrpcTlsTest, ServerNameOverrideIsChecked) {
  Serve(/*require_client_cert=*/false);
  EXPECT_EQ(Check(Client(pki().ca(), "", "", "localhost")), grpc::StatusCode::OK);
  EXPECT_EQ(Check(Client(pki().ca(), "", "", "unmask-executor.example")), grpc::StatusCode::UNAVAILABLE)
      << "the certificate does not carry that name";
}

TEST_F(GrpcTlsTest, MutualTlsRefusesClientsWithoutTheRightCertificate) {
  Serve(/*require_client_cert=*/true);
  EXPECT_EQ(Check(Client(pki().ca(), pki().client_cert(), pki().client_key())), grpc::StatusCode::OK);
  EXPECT_EQ(Check(Client(pki().ca(), pki().server_cert(), pki().server_key())), grpc::StatusCode::OK)
      << "the server certificate also works as a client certificate (one certificate per pod)";
  EXPECT_EQ(Check(Client(pki().ca())), grpc::StatusCode::UNAVAILABLE) << "no client certificate";
  EXPECT_EQ(Check(Client(pki().ca(), pki().other_client_cert(), pki().other_client_key())),
            grpc::StatusCode::UNAVAILABLE)
      << "a client certificate from another CA";
  EXPECT_EQ(Check(std::nullopt), grpc::StatusCode::UNAVAILABLE) << "plaintext";
  // The refused handshakes did not hurt the server.
  EXPECT_EQ(Check(Client(pki().ca(), pki().client_cert(), pki().client_key())), grpc::StatusCode::OK);
}

// --tls-refresh-seconds: a certificate renewed on disk (here from another CA, so that the
// clients tell the two apart) reaches new connections without a restart.
TEST_F(GrpcTlsTest, RenewedFilesReachNewConnectionsWithoutARestart) {
  unmask::testing::TempDir dir;
  const std::string cert = dir.File("tls.crt"), key = dir.File("tls.key");
  Replace(pki().server_cert(), cert);
  Replace(pki().server_key(), key);
  ServerTlsOptions o;
  o.cert_file = cert;
  o.key_file = key;
  o.refresh_seconds = 1;
  Serve(o);
  EXPECT_EQ(Check(Client(pki().ca())), grpc::StatusCode::OK);
  EXPECT_EQ(Check(Client(pki().other_ca())), grpc::StatusCode::UNAVAILABLE);

  Replace(pki().other_server_key(), key);
  Replace(pki().other_server_cert(), cert);
  // Within a few refresh intervals, a new connection meets the new certificate.
  EXPECT_EQ(Await(Client(pki().other_ca()), grpc::StatusCode::OK), grpc::StatusCode::OK)
      << "the renewed certificate never reached a new connection";
  EXPECT_EQ(Check(Client(pki().ca())), grpc::StatusCode::UNAVAILABLE) << "the old certificate is gone";

  // A key that does not fit the certificate (a renewal written file by file, not atomically):
  // gRPC's watcher takes it, and new handshakes fail until the pair fits again.
  Replace(pki().server_key(), key);
  EXPECT_EQ(Await(Client(pki().other_ca()), grpc::StatusCode::UNAVAILABLE), grpc::StatusCode::UNAVAILABLE);
  Replace(pki().server_cert(), cert);
  EXPECT_EQ(Await(Client(pki().ca()), grpc::StatusCode::OK), grpc::StatusCode::OK)
      << "a fitting pair again: served again, without a restart";
}

// The client side with --<peer>-tls-refresh-seconds (gRPC's file watcher): the same answers as
// the static credentials on the first look, and a client certificate renewed on disk (here the
// other CA's, which this server refuses) is what the next connection presents.
TEST_F(GrpcTlsTest, AWatchingClientChecksAsTheStaticOneAndPresentsRenewedCertificates) {
  Serve(/*require_client_cert=*/true);
  EXPECT_EQ(Check(Client(pki().ca(), pki().client_cert(), pki().client_key(), "", 1)), grpc::StatusCode::OK);
  EXPECT_EQ(Check(Client(pki().ca(), pki().client_cert(), pki().client_key(), "localhost", 1)), grpc::StatusCode::OK);
  EXPECT_EQ(Check(Client(pki().ca(), pki().client_cert(), pki().client_key(), "unmask-executor.example", 1)),
            grpc::StatusCode::UNAVAILABLE)
      << "the certificate does not carry that name";
  EXPECT_EQ(Check(Client(pki().other_ca(), pki().client_cert(), pki().client_key(), "", 1)),
            grpc::StatusCode::UNAVAILABLE)
      << "a server the client does not trust";

  // Material loaded once, at start, as the services load theirs; channels made from it later
  // (a new executor, a reconnection) present what the files hold then when it watches them.
  unmask::testing::TempDir dir;
  const std::string cert = dir.File("tls.crt"), key = dir.File("tls.key");
  Replace(pki().client_cert(), cert);
  Replace(pki().client_key(), key);
  const auto watching = Client(pki().ca(), cert, key, "", 1), once = Client(pki().ca(), cert, key);
  EXPECT_EQ(Check(watching), grpc::StatusCode::OK);
  EXPECT_EQ(Check(once), grpc::StatusCode::OK);
  Replace(pki().other_client_key(), key);  // renewed, here by the other CA, which this server refuses
  Replace(pki().other_client_cert(), cert);
  EXPECT_EQ(Check(watching), grpc::StatusCode::UNAVAILABLE) << "the renewed client certificate was not presented";
  EXPECT_EQ(Check(once), grpc::StatusCode::OK) << "without refresh: the certificate read at start";
}

}  // namespace
}  // namespace unmask::tls
