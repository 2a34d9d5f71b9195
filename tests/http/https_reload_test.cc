// The HTTP API over TLS with --http-tls-refresh-seconds: the real cpp-httplib server on port 0 over
// the scheduler core, and cpp-httplib's client verifying the server's certificate. A certificate
// renewed on disk reaches new connections without a restart, and so does a renewed client CA under
// mutual TLS; files that do not load are refused (logged) and the last good pair stays in use.
// And ServerTlsReloader's rules, on a fake clock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <thread>

#include "common/jobs/memory_job_store.h"
#include "services/common/tls_reload.h"
#include "services/scheduler/clamp_adapter.h"
#include "services/scheduler/http/completion_service.h"
#include "services/scheduler/http/http_server.h"
#include "services/scheduler/scheduler_core.h"
#include "tests/tls/test_pki.h"

namespace unmask::scheduler::http {
namespace {

using ::testing::HasSubstr;
using unmask::testing::ReadFile;
using unmask::testing::Replace;
using unmask::testing::TempDir;
using unmask::testing::TestPki;

class HttpsReloadTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new TestPki(); }
  static void TearDownTestSuite() { delete pki_; }
  static const TestPki& pki() { return *pki_; }

  // `mutual`: clients need a certificate from the CA in ca_ (pki().ca() at start).
  void Start(int refresh_seconds, bool mutual = false) {
    Replace(pki().server_cert(), cert_);
    Replace(pki().server_key(), key_);
    tls::ServerTlsOptions o;
    o.cert_file = cert_;
    o.key_file = key_;
    if (mutual) {
      Replace(pki().ca(), ca_);
      o.ca_file = ca_;
      o.require_client_cert = true;
    }
    o.refresh_seconds = refresh_seconds;
    auto tls = tls::LoadServerTls(o);
    ASSERT_TRUE(tls.ok()) << tls.status().ToString();
    auto snapshots = [] { return std::vector<ExecutorSnapshot>{}; };
    catalog_ = std::make_unique<ModelCatalog>(std::vector<std::string>{std::string(UNMASK_TEST_DATA_DIR)});
    core_ = std::make_unique<SchedulerCore>(store_, snapshots, *catalog_, MakeClamper(fitting::ClampPolicy::kOff, 2),
                                            SchedulerOptions{});
    completions_ = std::make_unique<CompletionService>(*core_, *catalog_, snapshots);
    HttpServerOptions ho;
    ho.host = "127.0.0.1";
    ho.tls = *tls;
    server_ = std::make_unique<OpenAiHttpServer>(*completions_, ho);
    auto port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  // GET /v1/models over a new connection from a client that trusts `ca` (and presents `cert` /
  // `key` when given): the HTTP status, or 0 when the handshake failed.
  int Get(const std::string& ca, const std::string& cert = "", const std::string& key = "") {
    httplib::SSLClient client("127.0.0.1", port_, cert, key);
    client.set_ca_cert_path(ca.c_str());
    client.enable_server_certificate_verification(true);
    client.set_connection_timeout(5);
    auto res = client.Get("/v1/models");
    return res ? res->status : 0;
  }
  // Polls until a client trusting `ca` (with `cert` / `key`) gets `status` (at most 10 s).
  int Await(const std::string& ca, int status, const std::string& cert = "", const std::string& key = "") {
    int got = Get(ca, cert, key);
    for (int i = 0; i < 50 && got != status; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      got = Get(ca, cert, key);
    }
    return got;
  }

  static TestPki* pki_;
  TempDir dir_;
  const std::string cert_ = dir_.File("tls.crt"), key_ = dir_.File("tls.key"), ca_ = dir_.File("ca.crt");
  jobs::MemoryJobStore store_;
  std::unique_ptr<ModelCatalog> catalog_;
  std::unique_ptr<SchedulerCore> core_;
  std::unique_ptr<CompletionService> completions_;
  std::unique_ptr<OpenAiHttpServer> server_;
  int port_ = 0;
};
TestPki* HttpsReloadTest::pki_ = nullptr;

TEST_F(HttpsReloadTest, ARenewedCertificateReachesNewConnectionsAndBadFilesAreRefused) {
  Start(/*refresh_seconds=*/1);
  EXPECT_EQ(Get(pki().ca()), 200);
  EXPECT_EQ(Get(pki().other_ca()), 0) << "a client that trusts another CA";

  // Renewed (here by another CA, so that the clients tell the two apart).
  Replace(pki().other_server_key(), key_);
  Replace(pki().other_server_cert(), cert_);
  EXPECT_EQ(Await(pki().other_ca(), 200), 200) << "the renewed certificate never reached a new connection";
  EXPECT_EQ(Get(pki().ca()), 0) << "the old certificate is gone";

  // A key that does not fit: refused; the last good pair keeps serving.
  Replace(pki().server_key(), key_);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(Get(pki().other_ca()), 200);
  Replace(pki().server_cert(), cert_);  // the pair fits again: taken
  EXPECT_EQ(Await(pki().ca(), 200), 200);
}

// Mutual TLS: the client CA file renewed (here to another CA) decides, from then on, whose client
// certificates new connections accept; a CA file that does not load leaves the last one in use.
TEST_F(HttpsReloadTest, ARenewedClientCaDecidesWhichClientsNewConnectionsAccept) {
  Start(/*refresh_seconds=*/1, /*mutual=*/true);
  const TestPki& p = pki();
  EXPECT_EQ(Get(p.ca(), p.client_cert(), p.client_key()), 200);
  EXPECT_EQ(Get(p.ca(), p.other_client_cert(), p.other_client_key()), 0) << "a client of another CA";
  EXPECT_EQ(Get(p.ca()), 0) << "a client without a certificate";

  Replace(p.other_ca(), ca_);
  EXPECT_EQ(Await(p.ca(), 200, p.other_client_cert(), p.other_client_key()), 200)
      << "the renewed client CA never reached a new connection";
  EXPECT_EQ(Get(p.ca(), p.client_cert(), p.client_key()), 0) << "the old CA's clients are refused";

  std::ofstream(dir_.File("broken.crt")) << "not a certificate\n";
  Replace(dir_.File("broken.crt"), ca_);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(Get(p.ca(), p.other_client_cert(), p.other_client_key()), 200) << "the last good CA stays";
  EXPECT_EQ(Get(p.ca(), p.client_cert(), p.client_key()), 0);
}

TEST_F(HttpsReloadTest, WithoutRefreshTheFilesAreReadOnce) {
  Start(/*refresh_seconds=*/0);
  Replace(pki().other_server_key(), key_);
  Replace(pki().other_server_cert(), cert_);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(Get(pki().ca()), 200);
  EXPECT_EQ(Get(pki().other_ca()), 0);
}

// The reloader alone, on a fake clock: it looks at the files once per interval, replaces the
// material only with files that load and differ, and logs each error once.
TEST_F(HttpsReloadTest, ReloaderLooksOncePerIntervalAndKeepsTheLastGoodFiles) {
  Replace(pki().server_cert(), cert_);
  Replace(pki().server_key(), key_);
  tls::ServerTlsOptions o;
  o.cert_file = cert_;
  o.key_file = key_;
  o.refresh_seconds = 60;
  auto initial = tls::LoadServerTls(o);
  ASSERT_TRUE(initial.ok());
  auto now = std::chrono::steady_clock::time_point{};
  std::vector<std::string> log;
  tls::ServerTlsReloader reloader(**initial, "test", [&](const std::string& line) { log.push_back(line); },
                                  [&] { return now; });
  const auto first = reloader.Current();
  Replace(pki().other_server_key(), key_);
  Replace(pki().other_server_cert(), cert_);
  now += std::chrono::seconds(59);
  EXPECT_EQ(reloader.Current(), first) << "not yet time to look";
  now += std::chrono::seconds(1);
  const auto renewed = reloader.Current();
  EXPECT_NE(renewed, first);
  EXPECT_EQ(renewed->cert_chain, ReadFile(pki().other_server_cert()));
  EXPECT_EQ(reloader.generation(), 1u);
  now += std::chrono::seconds(60);
  EXPECT_EQ(reloader.Current(), renewed) << "unchanged files: the same material";
  Replace(pki().server_key(), key_);  // does not fit
  for (int i = 0; i < 3; ++i) {
    now += std::chrono::seconds(60);
    EXPECT_EQ(reloader.Current(), renewed);
  }
  EXPECT_EQ(reloader.generation(), 1u);
  ASSERT_EQ(log.size(), 2u) << "one line for the reload, one for the error however often it is seen";
  EXPECT_THAT(log[0], HasSubstr("test: TLS files reloaded"));
  EXPECT_THAT(log[1], HasSubstr("not reloaded, the last good ones stay in use"));
  EXPECT_THAT(log[1], HasSubstr("--tls-key " + key_));
}

}  // namespace
}  // namespace unmask::scheduler::http
