#include "common/jobs/redis_tls.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace unmask::jobs {
namespace {

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

bool Readable(const std::string& path) { return std::ifstream(path).good(); }

Status BadFile(const std::string& field, const std::string& path, const std::string& why) {
  return InvalidFieldError(field, path + ": " + why);
}

// The client context: verification on, the CA (or the system's), the client pair.
StatusOr<SSL_CTX*> NewContext(const RedisTlsOptions& tls) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return InternalError("TLS: " + OpenSslError());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  // The pump reads only when poll says the socket is readable: a record without application
  // data (TLS 1.3's session tickets) must return to it, not block for data that may never come.
  SSL_CTX_clear_mode(ctx, SSL_MODE_AUTO_RETRY);
  Status failed;
  if (tls.ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx) != 1
                          : SSL_CTX_load_verify_locations(ctx, tls.ca_file.c_str(), nullptr) != 1) {
    failed = BadFile("ca_file", tls.ca_file.empty() ? "(the system's CAs)" : tls.ca_file,
                     "cannot load it as PEM CA certificates: " + OpenSslError());
  } else if (!tls.cert_file.empty() && SSL_CTX_use_certificate_chain_file(ctx, tls.cert_file.c_str()) != 1) {
    failed = BadFile("cert_file", tls.cert_file, "cannot load it as a PEM certificate: " + OpenSslError());
  } else if (!tls.key_file.empty() && SSL_CTX_use_PrivateKey_file(ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    const bool mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
    failed = BadFile("key_file", tls.key_file,
                     mismatch ? "does not fit the certificate " + tls.cert_file
                              : "cannot load it as a PEM private key: " + OpenSslError());
    ERR_clear_error();
  } else if (!tls.cert_file.empty() && SSL_CTX_check_private_key(ctx) != 1) {
    failed = BadFile("key_file", tls.key_file, "does not fit the certificate " + tls.cert_file);
  }
  if (!failed.ok()) {
    SSL_CTX_free(ctx);
    return failed;
  }
  return ctx;
}

// A TCP connection to host:port within timeout_ms, left blocking.
StatusOr<int> ConnectTcp(const std::string& host, int port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    return UnavailableError(std::string("cannot resolve the host: ") + gai_strerror(rc));
  std::string why = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = poll(&p, 1, timeout_ms) == 1 ? 0 : -1;
      int err = rc == 0 ? 0 : ETIMEDOUT;
      socklen_t len = sizeof err;
      if (rc == 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      errno = err;
      rc = err == 0 ? 0 : -1;
    }
    if (rc == 0) {
      fcntl(fd, F_SETFL, flags);
    } else {
      why = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return UnavailableError(why);
  return fd;
}

void SetIoTimeout(int fd, int ms) {
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// Writes all of [data, data + n) to a plain socket; false when the other end is gone.
bool SendAll(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

Status CheckRedisTls(const RedisTlsOptions& tls) {
  if (!tls.enabled) return OkStatus();
  if (tls.cert_file.empty() != tls.key_file.empty())
    return InvalidFieldError(tls.cert_file.empty() ? "cert_file" : "key_file",
                             "a client certificate needs both cert_file and key_file");
  for (const auto& [field, path] : {std::pair<const char*, const std::string*>{"ca_file", &tls.ca_file},
                                    {"cert_file", &tls.cert_file}, {"key_file", &tls.key_file}}) {
    if (!path->empty() && !Readable(*path)) return BadFile(field, *path, "cannot read it");
  }
  UNMASK_ASSIGN_OR_RETURN(SSL_CTX * ctx, NewContext(tls));
  SSL_CTX_free(ctx);
  return OkStatus();
}

StatusOr<std::unique_ptr<TlsBridge>> TlsBridge::Open(const std::string& host, int port, const RedisTlsOptions& tls,
                                                    int timeout_ms) {
  const std::string where = "TLS to " + host + ":" + std::to_string(port) + ": ";
  std::unique_ptr<TlsBridge> b(new TlsBridge());
  auto ctx = NewContext(tls);
  if (!ctx.ok()) return ctx.status().WithContext("TLS to " + host + ":" + std::to_string(port));
  b->ctx_ = *ctx;
  auto fd = ConnectTcp(host, port, timeout_ms);
  if (!fd.ok()) return UnavailableError(where + fd.status().message());
  b->tcp_fd_ = *fd;
  b->ssl_ = SSL_new(b->ctx_);
  SSL_set_fd(b->ssl_, b->tcp_fd_);
  const std::string name = tls.server_name.empty() ? host : tls.server_name;
  in6_addr ip{};
  const bool is_ip = inet_pton(AF_INET, name.c_str(), &ip) == 1 || inet_pton(AF_INET6, name.c_str(), &ip) == 1;
  X509_VERIFY_PARAM* param = SSL_get0_param(b->ssl_);
  if (is_ip) {
    X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
  } else {
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
    SSL_set_tlsext_host_name(b->ssl_, name.c_str());
  }
  SetIoTimeout(b->tcp_fd_, timeout_ms);
  if (SSL_connect(b->ssl_) != 1) {
    const long verify = SSL_get_verify_result(b->ssl_);
    std::string why = verify != X509_V_OK ? std::string("the server's certificate: ") + X509_verify_cert_error_string(verify) +
                                                " (server name '" + name + "')"
                                          : "handshake failed: " + OpenSslError();
    return UnavailableError(where + why);
  }
  SetIoTimeout(b->tcp_fd_, 0);  // the pump waits as long as hiredis does; the destructor ends it
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    return UnavailableError(where + "socketpair: " + std::strerror(errno));
  b->bridge_fd_ = pair[0];
  b->plain_fd_ = pair[1];
  b->thread_ = std::thread([bridge = b.get()] { bridge->Pump(); });
  return b;
}

int TlsBridge::TakePlainFd() {
  const int fd = plain_fd_;
  plain_fd_ = -1;
  return fd;
}

void TlsBridge::Pump() {
  char buf[16384];
  while (true) {
    if (SSL_pending(ssl_) == 0) {
      pollfd p[2] = {{bridge_fd_, POLLIN, 0}, {tcp_fd_, POLLIN, 0}};
      if (poll(p, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (p[0].revents != 0) {
        const ssize_t n = recv(bridge_fd_, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || SSL_write(ssl_, buf, static_cast<int>(n)) <= 0) return;  // hiredis closed, or TLS failed
      }
      if (p[1].revents == 0) continue;
    }
    const int n = SSL_read(ssl_, buf, sizeof buf);
    if (n <= 0) {
      const int e = SSL_get_error(ssl_, n);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) continue;  // a record without data
      shutdown(bridge_fd_, SHUT_WR);  // the server closed: hiredis reads EOF
      return;
    }
    if (!SendAll(bridge_fd_, buf, static_cast<std::size_t>(n))) return;
  }
}

TlsBridge::~TlsBridge() {
  if (tcp_fd_ >= 0) shutdown(tcp_fd_, SHUT_RDWR);
  if (bridge_fd_ >= 0) shutdown(bridge_fd_, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  if (tcp_fd_ >= 0) close(tcp_fd_);
  if (bridge_fd_ >= 0) close(bridge_fd_);
  if (plain_fd_ >= 0) close(plain_fd_);
}

}  // namespace unmask::jobs
