// TLS end to end with the real binaries: the whole stack (loader, executor, scheduler with its
// HTTP API, the CLI) over mutual TLS, with certificates made by openssl at test time; clients
// without the right certificate refused while the services keep serving; plaintext as the
// default; bad TLS flags refused at start naming the flag and the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <csignal>
#include <cstdio>

#include "common/jobs/testing/redis_server.h"
#include "tests/e2e/stack.h"
#include "tests/tls/test_pki.h"

namespace unmask::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kGenerate[] = "generate --model tiny-llada --prompt-ids 1,2,3 --gen-length 8 --block-length 8 --steps 8 --json";

// Server flags: TLS with the PKI's server certificate; with `mutual`, client certificates of
// the PKI's CA required.
std::vector<std::string> ServerTls(const TestPki& pki, bool mutual) {
  std::vector<std::string> f = {"--tls-cert", pki.server_cert(), "--tls-key", pki.server_key()};
  if (mutual) f.insert(f.end(), {"--tls-ca", pki.ca(), "--tls-require-client-cert"});
  return f;
}

// Client flags of one peer ("loader", "executor"; "" for the CLI): the CA, and the server
// certificate as the client certificate (one certificate per service, as in the Helm chart).
std::vector<std::string> PeerTls(const TestPki& pki, const std::string& peer) {
  const std::string f = "--" + (peer.empty() ? "" : peer + "-") + "tls-";
  return {f + "ca", pki.ca(), f + "cert", pki.server_cert(), f + "key", pki.server_key()};
}

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string CliTls(const std::string& ca, const std::string& cert = "", const std::string& key = "") {
  std::string s = "--tls-ca " + ca;
  if (!cert.empty()) s += " --tls-cert " + cert + " --tls-key " + key;
  return s + " ";
}

httplib::Result HttpsGet(int port, const TestPki& pki, bool client_cert, const std::string& path = "/v1/models") {
  std::unique_ptr<httplib::SSLClient> client =
      client_cert ? std::make_unique<httplib::SSLClient>("127.0.0.1", port, pki.client_cert(), pki.client_key())
                  : std::make_unique<httplib::SSLClient>("127.0.0.1", port);
  client->set_ca_cert_path(pki.ca().c_str());
  client->enable_server_certificate_verification(true);
  client->set_connection_timeout(5);
  return client->Get(path);
}

// Output of a shell command (stdout and stderr).
std::string Shell(const std::string& cmd) {
  std::string out;
  FILE* pipe = ::popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  ::pclose(pipe);
  return out;
}

// GET /v1/models with `openssl s_client` and the client certificate; `session` is
// "-sess_out FILE" (keep the TLS session) or "-sess_in FILE" (resume it, as Node's https.Agent
// and browsers do).
std::string OpenSslGet(int port, const TestPki& pki, const std::string& session) {
  return Shell("printf 'GET /v1/models HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n' | "
               "openssl s_client -connect 127.0.0.1:" + std::to_string(port) + " -CAfile " + pki.ca() + " -cert " +
               pki.client_cert() + " -key " + pki.client_key() + " -ign_eof " + session);
}

TEST(TlsEndToEndTest, WholeStackOverMutualTls) {
  // A refused TLS handshake can close the socket under an HTTPS client's write; like curl and
  // the scheduler, this process must not die of the SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  const TestPki pki;
  Stack stack;
  stack.StartLoader(ServerTls(pki, true));
  EXPECT_THAT(stack.loader().output(), HasSubstr("(mutual TLS: client certificates required)"));
  stack.StartExecutor(Concat(ServerTls(pki, true), PeerTls(pki, "loader")));
  const int s = stack.StartScheduler(
      Concat(Concat(ServerTls(pki, true), PeerTls(pki, "executor")), {"--http-port", "0"}));
  const int http_port = HttpPort(stack.scheduler(s));
  ASSERT_GT(http_port, 0) << stack.scheduler(s).output();
  EXPECT_THAT(stack.scheduler(s).output(), HasSubstr("HTTPS, mutual TLS"));

  // The CLI through scheduler -> executor -> loader's weights, every hop over mutual TLS.
  CliResult r = stack.Cli(s, CliTls(pki.ca(), pki.client_cert(), pki.client_key()) + kGenerate);
  ASSERT_EQ(r.exit_code, 0) << r.out << stack.scheduler(s).output() << stack.executor(0).output();
  EXPECT_THAT(r.out, HasSubstr("\"completed\""));
  for (const std::string& addr : {stack.loader_address(), stack.executor_address(0), stack.scheduler_address(s)}) {
    r = RunCli(CliTls(pki.ca(), pki.client_cert(), pki.client_key()) + "health --addr " + addr);
    EXPECT_EQ(r.exit_code, 0) << addr << ": " << r.out;
    EXPECT_THAT(r.out, HasSubstr("SERVING"));
  }
  r = RunCli(CliTls(pki.ca(), pki.client_cert(), pki.client_key()) + "load --loader " + stack.loader_address() +
             " --model tiny-llada");
  EXPECT_EQ(r.exit_code, 0) << r.out;

  // The HTTP API over HTTPS with a client certificate.
  httplib::Result models = HttpsGet(http_port, pki, /*client_cert=*/true);
  ASSERT_TRUE(models) << httplib::to_string(models.error());
  EXPECT_EQ(models->status, 200);
  EXPECT_THAT(models->body, HasSubstr("tiny-llada"));
  httplib::SSLClient client("127.0.0.1", http_port, pki.client_cert(), pki.client_key());
  client.set_ca_cert_path(pki.ca().c_str());
  client.enable_server_certificate_verification(true);
  auto completion = client.Post("/v1/completions",
                                R"({"model": "tiny-llada", "prompt": [1, 2, 3], "max_tokens": 8, "block_length": 8, "steps": 8})",
                                "application/json");
  ASSERT_TRUE(completion) << httplib::to_string(completion.error());
  EXPECT_EQ(completion->status, 200) << completion->body;
  EXPECT_THAT(completion->body, HasSubstr("\"text_completion\""));
  // A client that resumes its TLS session is served too.
  const std::string session = pki.File("http-session.pem");
  EXPECT_THAT(OpenSslGet(http_port, pki, "-sess_out " + session), HasSubstr("HTTP/1.1 200 OK"));
  const std::string resumed = OpenSslGet(http_port, pki, "-sess_in " + session);
  EXPECT_THAT(resumed, AllOf(HasSubstr("Reused, TLSv1"), HasSubstr("HTTP/1.1 200 OK"))) << resumed;

  // Refused: no client certificate, a certificate from another CA, plaintext, a client that
  // does not trust the server's CA. gRPC says UNAVAILABLE (the handshake failed).
  for (const std::string& flags :
       {CliTls(pki.ca()), CliTls(pki.ca(), pki.other_client_cert(), pki.other_client_key()), std::string(),
        CliTls(pki.other_ca(), pki.client_cert(), pki.client_key())}) {
    r = stack.Cli(s, "--timeout 10 " + flags + kGenerate);
    EXPECT_NE(r.exit_code, 0) << flags << ": " << r.out;
    EXPECT_THAT(r.out, AllOf(HasSubstr("UNAVAILABLE"), Not(HasSubstr("\"completed\"")))) << flags;
    r = RunCli("--timeout 10 " + flags + "health --addr " + stack.loader_address());
    EXPECT_NE(r.exit_code, 0) << flags << ": " << r.out;
  }
  EXPECT_FALSE(HttpsGet(http_port, pki, /*client_cert=*/false)) << "HTTPS without a client certificate";
  httplib::Client plain("127.0.0.1", http_port);
  plain.set_connection_timeout(5);
  auto plain_result = plain.Get("/v1/models");
  EXPECT_TRUE(!plain_result || plain_result->status != 200) << "plain HTTP against the HTTPS API";

  // The services kept serving through the refused handshakes.
  EXPECT_TRUE(stack.loader().running() && stack.executor(0).running() && stack.scheduler(s).running());
  r = stack.Cli(s, CliTls(pki.ca(), pki.client_cert(), pki.client_key()) + kGenerate);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("\"completed\""));
  models = HttpsGet(http_port, pki, /*client_cert=*/true);
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
}

TEST(TlsEndToEndTest, WholeStackOverMutualTlsWithTheFilesReReadAsTheHelmChartSetsIt) {
  // tls.refreshSeconds: every server and every client watches its files (gRPC's file watcher;
  // the HTTP API's own reloader). The same answers as with files read once.
  std::signal(SIGPIPE, SIG_IGN);
  const TestPki pki;
  const std::vector<std::string> refresh = {"--tls-refresh-seconds", "60"};
  Stack stack;
  stack.StartLoader(Concat(ServerTls(pki, true), refresh));
  EXPECT_THAT(stack.loader().output(), HasSubstr("files re-read every 60 s"));
  stack.StartExecutor(Concat(Concat(ServerTls(pki, true), refresh),
                             Concat(PeerTls(pki, "loader"), {"--loader-tls-refresh-seconds", "60"})));
  const int s = stack.StartScheduler(Concat(Concat(Concat(ServerTls(pki, true), refresh), PeerTls(pki, "executor")),
                                            {"--executor-tls-refresh-seconds", "60", "--http-port", "0"}));
  const int http_port = HttpPort(stack.scheduler(s));
  ASSERT_GT(http_port, 0) << stack.scheduler(s).output();
  CliResult r = stack.Cli(s, CliTls(pki.ca(), pki.client_cert(), pki.client_key()) + kGenerate);
  ASSERT_EQ(r.exit_code, 0) << r.out << stack.scheduler(s).output() << stack.executor(0).output();
  EXPECT_THAT(r.out, HasSubstr("\"completed\""));
  r = stack.Cli(s, "--timeout 10 " + CliTls(pki.ca()) + "models");
  EXPECT_NE(r.exit_code, 0) << "mutual TLS still refuses a client without a certificate: " << r.out;
  httplib::Result models = HttpsGet(http_port, pki, /*client_cert=*/true);
  ASSERT_TRUE(models) << httplib::to_string(models.error());
  EXPECT_EQ(models->status, 200);
}

// metrics.tls with requireClientCert, as the Helm chart sets it: every service's /metrics over
// HTTPS to a scraper with a certificate from the CA, and to no one else.
TEST(TlsEndToEndTest, EveryServicesMetricsOverMutualTls) {
  std::signal(SIGPIPE, SIG_IGN);
  const TestPki pki;
  const std::vector<std::string> metrics = {"--metrics-tls-cert", pki.server_cert(), "--metrics-tls-key",
                                            pki.server_key(),     "--metrics-tls-ca",  pki.ca(),
                                            "--metrics-tls-require-client-cert", "--metrics-tls-refresh-seconds", "60"};
  Stack stack;
  stack.StartLoader(metrics);
  stack.StartExecutor(metrics);
  const int s = stack.StartScheduler(metrics);
  EXPECT_THAT(stack.scheduler(s).output(), HasSubstr("metrics=\"mutual TLS\""));
  const std::pair<const char*, int> ports[] = {{"loader", stack.loader_metrics_port()},
                                               {"executor", stack.executor_metrics_port(0)},
                                               {"scheduler", stack.scheduler_metrics_port(s)}};
  for (const auto& [service, port] : ports) {
    SCOPED_TRACE(service);
    ASSERT_GT(port, 0);
    httplib::Result scraped = HttpsGet(port, pki, /*client_cert=*/true, "/metrics");
    ASSERT_TRUE(scraped) << httplib::to_string(scraped.error());
    EXPECT_EQ(scraped->status, 200);
    EXPECT_THAT(scraped->body, HasSubstr("# TYPE unmask_queue_depth gauge"));
    EXPECT_FALSE(HttpsGet(port, pki, /*client_cert=*/false, "/metrics")) << "a scraper without a certificate";
  }
}

TEST(TlsEndToEndTest, ServerTlsWithoutClientCertificatesAndPlaintextBehind) {
  // TLS at the front door only: the CLI and HTTP clients need the CA and no certificate; the
  // scheduler reaches a plaintext executor and loader (the default).
  const TestPki pki;
  Stack stack;
  stack.StartLoader();
  EXPECT_THAT(stack.loader().output(), HasSubstr("(plaintext)"));
  stack.StartExecutor();
  const int s = stack.StartScheduler(Concat(ServerTls(pki, false), {"--http-port", "0"}));
  const int http_port = HttpPort(stack.scheduler(s));
  ASSERT_GT(http_port, 0) << stack.scheduler(s).output();

  CliResult r = stack.Cli(s, CliTls(pki.ca()) + kGenerate);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("\"completed\""));
  r = stack.Cli(s, "--tls --tls-server-name localhost " + CliTls(pki.ca()) + "models");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = stack.Cli(s, "--timeout 10 " + std::string(kGenerate));
  EXPECT_NE(r.exit_code, 0) << "plaintext against TLS: " << r.out;
  EXPECT_THAT(r.out, HasSubstr("UNAVAILABLE"));
  r = stack.Cli(s, "--timeout 10 --tls-server-name wrong.example " + CliTls(pki.ca()) + "models");
  EXPECT_NE(r.exit_code, 0) << "a name the certificate does not carry: " << r.out;

  auto models = HttpsGet(http_port, pki, /*client_cert=*/false);
  ASSERT_TRUE(models) << httplib::to_string(models.error());
  EXPECT_EQ(models->status, 200);

  // The executor and the loader still speak plaintext, and a TLS client is refused there.
  r = RunCli("health --addr " + stack.executor_address(0));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = RunCli("--timeout 10 " + CliTls(pki.ca()) + "health --addr " + stack.loader_address());
  EXPECT_NE(r.exit_code, 0) << r.out;
}

TEST(TlsEndToEndTest, PlaintextIsTheDefault) {
  Stack stack;
  stack.StartLoader();
  stack.StartExecutor();
  const int s = stack.StartScheduler({"--http-port", "0"});
  EXPECT_THAT(stack.scheduler(s).output(), AllOf(HasSubstr("(plaintext)"), HasSubstr("(plain HTTP)")));
  EXPECT_THAT(stack.executor(0).output(), HasSubstr("(plaintext)"));
  CliResult r = stack.Cli(s, kGenerate);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("\"completed\""));
  httplib::Client plain("127.0.0.1", HttpPort(stack.scheduler(s)));
  auto models = plain.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
}

// Runs a binary that must refuse to start; returns its exit code and output.
std::pair<int, std::string> Refused(std::vector<std::string> argv) {
  Process p(std::move(argv));
  const int code = p.Wait();
  return {code, p.output()};
}

TEST(TlsEndToEndTest, BadTlsFlagsAreRefusedAtStartNamingTheFlagAndFile) {
  const TestPki pki;
  TempDir dir;
  WriteFile(dir.File("garbage.pem"), "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n");
  const std::string missing = dir.File("missing.key");

  auto [code, out] = Refused({LOADER_BIN, "--listen", "127.0.0.1:0", "--model-root", dir.path(), "--tls-cert",
                              pki.server_cert()});
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, AllOf(HasSubstr("--tls-cert " + pki.server_cert()), HasSubstr("without --tls-key")));

  std::tie(code, out) = Refused({LOADER_BIN, "--listen", "127.0.0.1:0", "--model-root", dir.path(), "--tls-cert",
                                 pki.server_cert(), "--tls-key", missing});
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, AllOf(HasSubstr("--tls-key " + missing), HasSubstr("cannot read it")));

  std::tie(code, out) = Refused({SCHEDULER_BIN, "--listen", "127.0.0.1:0", "--tls-cert", dir.File("garbage.pem"),
                                 "--tls-key", pki.server_key()});
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, AllOf(HasSubstr("--tls-cert " + dir.File("garbage.pem")), HasSubstr("certificate")));

  std::tie(code, out) = Refused({SCHEDULER_BIN, "--listen", "127.0.0.1:0", "--http-port", "0", "--http-tls-cert",
                                 pki.server_cert(), "--http-tls-key", pki.client_key()});
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, AllOf(HasSubstr("--http-tls-key " + pki.client_key()), HasSubstr("does not belong")));

  std::tie(code, out) = Refused({SCHEDULER_BIN, "--listen", "127.0.0.1:0", "--tls-cert", pki.server_cert(),
                                 "--tls-key", pki.server_key(), "--tls-require-client-cert"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, HasSubstr("--tls-require-client-cert needs --tls-ca"));

  std::tie(code, out) = Refused({LOADER_BIN, "--listen", "127.0.0.1:0", "--model-root", dir.path(), "--tls-cert",
                                 pki.server_cert(), "--tls-key", pki.server_key(), "--tls-refresh-seconds", "-5"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, HasSubstr("--tls-refresh-seconds -5: expected 0"));
  std::tie(code, out) = Refused({SCHEDULER_BIN, "--listen", "127.0.0.1:0", "--http-port", "0",
                                 "--http-tls-refresh-seconds", "30"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, HasSubstr("--http-tls-refresh-seconds is given without --http-tls-cert"));

  // The executor checks its TLS flags before it asks the loader for anything.
  std::tie(code, out) = Refused({EXECUTOR_BIN, "--listen", "127.0.0.1:0", "--loader", "127.0.0.1:1", "--model", "m",
                                 "--loader-tls-ca", missing});
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, AllOf(HasSubstr("--loader-tls-ca " + missing), HasSubstr("cannot read it")));
  std::tie(code, out) = Refused({EXECUTOR_BIN, "--listen", "127.0.0.1:0", "--loader", "127.0.0.1:1", "--model", "m",
                                 "--tls-key", pki.server_key()});
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, HasSubstr("--tls-key is given without --tls-cert"));

  CliResult r = RunCli("--tls-cert " + pki.client_cert() + " health --addr 127.0.0.1:1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, AllOf(HasSubstr("--tls-cert " + pki.client_cert()), HasSubstr("without --tls-key")));
  r = RunCli("--tls-ca " + dir.File("garbage.pem") + " models");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--tls-ca " + dir.File("garbage.pem")));
}

// The job store over mutual TLS to Redis's tls-port (the scheduler's --redis-tls-* flags): jobs
// are stored and served through it; a scheduler without the client certificate or without TLS
// does not start; bad flags are refused naming the flag.
TEST(TlsEndToEndTest, TheJobStoreOverMutualTlsToRedis) {
  const TestPki pki;
  const int tls_port = jobs::testing::PickFreePort();
  jobs::testing::RedisServerOptions options;
  options.extra_args = {"--tls-port", std::to_string(tls_port), "--tls-cert-file", pki.server_cert(),
                        "--tls-key-file", pki.server_key(), "--tls-ca-cert-file", pki.ca(), "--tls-auth-clients", "yes"};
  auto redis = jobs::testing::RedisServer::Start(options);
  ASSERT_TRUE(redis.ok()) << redis.status().ToString();
  const std::string address = "127.0.0.1:" + std::to_string(tls_port);
  const std::vector<std::string> tls = {"--redis-tls-ca", pki.ca(), "--redis-tls-cert", pki.client_cert(),
                                        "--redis-tls-key", pki.client_key()};
  Stack stack;
  stack.StartLoader();
  stack.StartExecutor();
  const int s = stack.StartScheduler(Concat({"--redis", address}, tls));
  EXPECT_THAT(stack.scheduler(s).output(), HasSubstr("Redis job store at " + address + " (mutual TLS"));
  CliResult r = stack.Cli(s, kGenerate);
  ASSERT_EQ(r.exit_code, 0) << r.out << stack.scheduler(s).output();
  EXPECT_THAT(r.out, HasSubstr("\"completed\""));
  r = stack.Cli(s, "jobs --limit 5");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("succeeded")) << "the job, read back from Redis over TLS";

  // Refused at start: no client certificate, no TLS at all (plain RESP to the TLS port).
  for (const std::vector<std::string>& flags : {std::vector<std::string>{"--redis-tls-ca", pki.ca()},
                                                std::vector<std::string>{}}) {
    auto [code, out] = Refused(
        Concat({SCHEDULER_BIN, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--redis", address}, flags));
    EXPECT_EQ(code, 1) << out;
    EXPECT_THAT(out, HasSubstr("--redis " + address)) << out;
  }
  // Bad flags: exit 2, the flag named.
  auto [code, out] = Refused({SCHEDULER_BIN, "--listen", "127.0.0.1:0", "--redis", address, "--redis-tls-ca",
                              pki.File("missing.crt")});
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, AllOf(HasSubstr("--redis-tls-ca " + pki.File("missing.crt")), HasSubstr("cannot read it")));
  std::tie(code, out) = Refused({SCHEDULER_BIN, "--listen", "127.0.0.1:0", "--redis-tls"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, HasSubstr("--redis-tls: needs --redis"));
  std::tie(code, out) =
      Refused({SCHEDULER_BIN, "--listen", "127.0.0.1:0", "--redis", address, "--redis-tls-refresh-seconds", "30"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, HasSubstr("--redis-tls-refresh-seconds: must stay 0"));
}

}  // namespace
}  // namespace unmask::testing
