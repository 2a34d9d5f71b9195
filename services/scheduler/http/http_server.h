// The HTTP glue of the OpenAI-compatible API (Debian's cpp-httplib): routes, bytes and headers
// in, CompletionService, bytes and headers out. Everything else lives in the library-free files
// beside it.
//
//   GET  /v1/models            the models executors serve now
//   POST /v1/chat/completions  messages in the model's chat template
//   POST /v1/completions       a prompt as it is (or token ids)
//
// Responses carry X-Unmask-Job-Id and X-Unmask-Clamped (what the memory clamp changed, "none"
// when nothing). Bodies over max_body_bytes get 413; every error is an OpenAI error object.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "services/common/tls_options.h"
#include "services/scheduler/http/completion_service.h"

namespace httplib {
class Server;
}

namespace unmask::scheduler::http {

}  // namespace unmask::scheduler::http
namespace unmask::tls {
class ReloadingCertificate;  // services/common/ssl_context.h
}  // namespace unmask::tls
namespace unmask::scheduler::http {

struct HttpServerOptions {
  std::string host = "0.0.0.0";
  int port = 0;  // 0 picks a free port
  std::size_t max_body_bytes = 4u << 20;
  // Requests served at once (a streamed request holds one for its whole job): well above the
  // streams a scheduler queues and runs, so that --max-queue, not the thread count, decides what
  // is refused (a thread that waits costs a little memory and no CPU).
  int threads = 256;
  std::optional<tls::ServerTlsMaterial> tls;  // HTTPS (and mutual TLS); std::nullopt: plain HTTP
};

class OpenAiHttpServer {
 public:
  OpenAiHttpServer(CompletionService& service, HttpServerOptions options);
  ~OpenAiHttpServer();
  OpenAiHttpServer(const OpenAiHttpServer&) = delete;
  OpenAiHttpServer& operator=(const OpenAiHttpServer&) = delete;

  // Binds and serves on a thread of its own; returns the bound port. InvalidArgument when the
  // TLS material cannot make a server context.
  StatusOr<int> Start();
  // Ends the requests in flight (a waiting client gets 503, its job goes on in the queue) and
  // stops serving.
  void Stop();

 private:
  void Route();

  CompletionService& service_;
  HttpServerOptions options_;
  // With options_.tls->files.refresh_seconds: the certificate each handshake takes. Declared
  // before server_, whose SSL context points to it.
  std::unique_ptr<tls::ReloadingCertificate> reloading_;
  std::unique_ptr<httplib::Server> server_;  // an httplib::SSLServer with options_.tls
  Status tls_status_;                         // why the SSLServer could not be set up
  std::thread thread_;
};

}  // namespace unmask::scheduler::http
