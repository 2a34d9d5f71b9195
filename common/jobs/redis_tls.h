// Redis over TLS (Redis 6+'s tls-port; managed Redis services require it) for hiredis 0.14,
// which has no TLS of its own: a TlsBridge opens the TCP connection, completes the TLS handshake
// (the server's certificate verified against the CA and the server name), and then moves bytes
// between it and one end of a local socket pair; hiredis gets the other end (redisConnectFd) and
// speaks plain RESP on it, its timeouts included. One bridge (and one thread) per connection.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "common/util/status.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace unmask::jobs {

struct RedisTlsOptions {
  bool enabled = false;
  std::string ca_file;    // the CAs to trust (PEM); empty: the system's
  std::string cert_file;  // a client certificate for mutual TLS (with key_file), else empty
  std::string key_file;
  std::string server_name;  // the name (or IP) the server's certificate must carry; empty: the host
};

// The files load: the CA bundle, the client pair (both or neither, and the key fits the
// certificate). InvalidArgument naming the field ("ca_file", "cert_file", "key_file") and the
// file; OkStatus when TLS is off.
Status CheckRedisTls(const RedisTlsOptions& tls);

class TlsBridge {
 public:
  // Connects to host:port and completes the handshake within timeout_ms. Unavailable
  // "TLS to <host>:<port>: <why>" (refused, timed out, certificate not trusted, name mismatch,
  // client certificate refused by the server).
  static StatusOr<std::unique_ptr<TlsBridge>> Open(const std::string& host, int port, const RedisTlsOptions& tls,
                                                  int timeout_ms);
  ~TlsBridge();  // ends the connection and joins the thread
  TlsBridge(const TlsBridge&) = delete;
  TlsBridge& operator=(const TlsBridge&) = delete;

  // The plain end, for hiredis (which closes it in redisFree); -1 after the first call.
  int TakePlainFd();

 private:
  TlsBridge() = default;
  void Pump();  // the thread: plain end <-> TLS until either side ends

  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int tcp_fd_ = -1;
  int bridge_fd_ = -1;  // our end of the pair
  int plain_fd_ = -1;   // hiredis's end until taken
  std::thread thread_;
};

}  // namespace unmask::jobs
