// Loading TLS flags: plaintext by default, and every bad combination or file refused with a
// message naming the flag and the file.
#include "services/common/tls_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/tls/test_pki.h"

namespace unmask::tls {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using unmask::testing::ReadFile;
using unmask::testing::TestPki;
using unmask::testing::WriteFile;

class TlsOptionsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new TestPki(); }
  static void TearDownTestSuite() { delete pki_; }
  static const TestPki& pki() { return *pki_; }

  static ServerTlsOptions Server() {
    ServerTlsOptions o;
    o.cert_file = pki().server_cert();
    o.key_file = pki().server_key();
    return o;
  }
  static std::string ServerError(const ServerTlsOptions& o) {
    auto loaded = LoadServerTls(o);
    EXPECT_FALSE(loaded.ok());
    return loaded.ok() ? "" : std::string(loaded.status().message());
  }
  static std::string ClientError(const ClientTlsOptions& o) {
    auto loaded = LoadClientTls(o);
    EXPECT_FALSE(loaded.ok());
    return loaded.ok() ? "" : std::string(loaded.status().message());
  }

  static TestPki* pki_;
};
TestPki* TlsOptionsTest::pki_ = nullptr;

TEST_F(TlsOptionsTest, NoFlagsMeanPlaintext) {
  auto server = LoadServerTls(ServerTlsOptions{});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_FALSE(server->has_value());
  EXPECT_EQ(Describe(*server), "plaintext");
  auto client = LoadClientTls(ClientTlsOptions{});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_FALSE(client->has_value());
}

TEST_F(TlsOptionsTest, ServerLoadsCertificateKeyAndClientCa) {
  ServerTlsOptions o = Server();
  auto tls = LoadServerTls(o);
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  ASSERT_TRUE(tls->has_value());
  EXPECT_EQ((*tls)->cert_chain, ReadFile(pki().server_cert()));
  EXPECT_EQ((*tls)->private_key, ReadFile(pki().server_key()));
  EXPECT_TRUE((*tls)->client_ca.empty());
  EXPECT_EQ(Describe(*tls), "TLS");

  o.ca_file = pki().ca();
  o.require_client_cert = true;
  tls = LoadServerTls(o);
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  EXPECT_EQ((*tls)->client_ca, ReadFile(pki().ca()));
  EXPECT_TRUE((*tls)->require_client_cert);
  EXPECT_EQ(Describe(*tls), "mutual TLS: client certificates required");
}

TEST_F(TlsOptionsTest, CertificateWithoutKeyIsRefused) {
  ServerTlsOptions o = Server();
  o.key_file.clear();
  EXPECT_THAT(ServerError(o), AllOf(HasSubstr("--tls-cert " + pki().server_cert()), HasSubstr("without --tls-key")));
  o = Server();
  o.cert_file.clear();
  EXPECT_THAT(ServerError(o), HasSubstr("--tls-key is given without --tls-cert"));
}

TEST_F(TlsOptionsTest, MutualTlsNeedsTheClientCa) {
  ServerTlsOptions o = Server();
  o.require_client_cert = true;
  EXPECT_THAT(ServerError(o), HasSubstr("--tls-require-client-cert needs --tls-ca"));
  ServerTlsOptions no_cert;
  no_cert.ca_file = pki().ca();
  EXPECT_THAT(ServerError(no_cert), HasSubstr("--tls-ca is given without --tls-cert"));
}

TEST_F(TlsOptionsTest, RefreshSecondsAreCheckedAndKeptWithTheFiles) {
  ServerTlsOptions o = Server();
  o.refresh_seconds = 30;
  auto tls = LoadServerTls(o);
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  EXPECT_EQ((*tls)->files.refresh_seconds, 30);
  EXPECT_EQ((*tls)->files.cert_file, pki().server_cert());
  EXPECT_EQ((*tls)->files.key_file, pki().server_key());
  EXPECT_EQ(Describe(*tls), "TLS; files re-read every 30 s");
  o.refresh_seconds = -1;
  EXPECT_THAT(ServerError(o), HasSubstr("--tls-refresh-seconds -1: expected 0"));
  ServerTlsOptions plaintext;
  plaintext.refresh_seconds = 5;
  EXPECT_TRUE(plaintext.given());
  EXPECT_THAT(ServerError(plaintext), HasSubstr("--tls-refresh-seconds is given without --tls-cert"));
}

TEST_F(TlsOptionsTest, ClientRefreshSecondsNeedFilesToRead) {
  ClientTlsOptions o;
  o.flag_prefix = "--loader-tls-";
  o.refresh_seconds = 10;
  EXPECT_TRUE(o.wanted());
  EXPECT_THAT(ClientError(o), HasSubstr("--loader-tls-refresh-seconds is given without --loader-tls-ca or --loader-tls-cert"));
  o.ca_file = pki().ca();
  o.refresh_seconds = -2;
  EXPECT_THAT(ClientError(o), HasSubstr("--loader-tls-refresh-seconds -2: expected 0"));
  o.refresh_seconds = 10;
  auto tls = LoadClientTls(o);
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  EXPECT_EQ((*tls)->files.refresh_seconds, 10);
  EXPECT_EQ((*tls)->files.ca_file, pki().ca());
}

TEST_F(TlsOptionsTest, UnreadableFileIsNamedWithItsFlag) {
  ServerTlsOptions o = Server();
  o.key_file = pki().File("missing.key");
  EXPECT_THAT(ServerError(o), AllOf(HasSubstr("--tls-key " + pki().File("missing.key")), HasSubstr("cannot read it"),
                                    HasSubstr("No such file")));
  o = Server();
  o.ca_file = pki().File("");  // a directory
  EXPECT_THAT(ServerError(o), HasSubstr("--tls-ca " + pki().File("")));
}

TEST_F(TlsOptionsTest, GarbagePemIsRefused) {
  WriteFile(pki().File("garbage.pem"), "this is not a certificate\n");
  WriteFile(pki().File("empty.pem"), "");
  ServerTlsOptions o = Server();
  o.cert_file = pki().File("garbage.pem");
  EXPECT_THAT(ServerError(o), AllOf(HasSubstr("--tls-cert " + pki().File("garbage.pem")),
                                    HasSubstr("no PEM certificate")));
  o = Server();
  o.key_file = pki().File("garbage.pem");
  EXPECT_THAT(ServerError(o), AllOf(HasSubstr("--tls-key " + pki().File("garbage.pem")), HasSubstr("no unencrypted PEM private key")));
  o = Server();
  o.ca_file = pki().File("empty.pem");
  EXPECT_THAT(ServerError(o), AllOf(HasSubstr("--tls-ca " + pki().File("empty.pem")), HasSubstr("empty")));
}

TEST_F(TlsOptionsTest, CorruptCertificateAfterAGoodOneIsRefused) {
  // A bundle whose second certificate has damaged base64.
  std::string ca = ReadFile(pki().ca());
  std::string broken = ca;
  broken[broken.find('\n') + 10] = '!';
  WriteFile(pki().File("bundle.pem"), ca + broken);
  ServerTlsOptions o = Server();
  o.ca_file = pki().File("bundle.pem");
  EXPECT_THAT(ServerError(o), AllOf(HasSubstr("--tls-ca " + pki().File("bundle.pem")), HasSubstr("certificate 2")));
}

TEST_F(TlsOptionsTest, KeyOfAnotherCertificateIsRefused) {
  ServerTlsOptions o = Server();
  o.key_file = pki().client_key();
  EXPECT_THAT(ServerError(o), AllOf(HasSubstr("--tls-key " + pki().client_key()),
                                    HasSubstr("does not belong to the certificate in --tls-cert " + pki().server_cert())));
}

TEST_F(TlsOptionsTest, ClientFlagsUseThePeerPrefix) {
  ClientTlsOptions o;
  o.flag_prefix = "--loader-tls-";
  o.cert_file = pki().client_cert();
  EXPECT_THAT(ClientError(o), AllOf(HasSubstr("--loader-tls-cert " + pki().client_cert()),
                                    HasSubstr("without --loader-tls-key")));
  o.key_file = pki().client_key();
  o.ca_file = pki().File("nope.crt");
  EXPECT_THAT(ClientError(o), AllOf(HasSubstr("--loader-tls-ca " + pki().File("nope.crt")), HasSubstr("cannot read it")));
  o.ca_file = pki().ca();
  o.server_name = "localhost";
  auto tls = LoadClientTls(o);
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  ASSERT_TRUE(tls->has_value());
  EXPECT_EQ((*tls)->root_ca, ReadFile(pki().ca()));
  EXPECT_EQ((*tls)->cert_chain, ReadFile(pki().client_cert()));
  EXPECT_EQ((*tls)->server_name, "localhost");
}

TEST_F(TlsOptionsTest, TlsFlagAloneUsesSystemRoots) {
  ClientTlsOptions o;
  o.enabled = true;
  auto tls = LoadClientTls(o);
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  ASSERT_TRUE(tls->has_value());
  EXPECT_TRUE((*tls)->root_ca.empty());
  EXPECT_TRUE((*tls)->cert_chain.empty());
}

}  // namespace
}  // namespace unmask::tls
