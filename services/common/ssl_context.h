// OpenSSL server contexts from loaded TLS material (tls_options.h): the scheduler's HTTP API
// (cpp-httplib's SSLServer configures its own context with ConfigureServerContext) and every
// service's /metrics endpoint (NewServerSslContext). Mutual TLS refuses a client without a
// certificate from the CA during the handshake. With refresh_seconds, every handshake takes the
// certificate, key and client CA the files hold (ReloadingCertificate).
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "common/util/status.h"
#include "services/common/tls_options.h"
#include "services/common/tls_reload.h"

namespace unmask::tls {

// A certificate chain and its key, and the client CA, parsed once.
struct TlsIdentity {
  X509* leaf = nullptr;
  STACK_OF(X509)* chain = nullptr;  // the certificates after the leaf
  EVP_PKEY* key = nullptr;
  // The client CA's certificates (null when there is none): what a client's certificate is
  // verified against, and the names the CertificateRequest lists.
  X509_STORE* client_store = nullptr;
  STACK_OF(X509_NAME)* client_names = nullptr;
  TlsIdentity() = default;
  TlsIdentity(const TlsIdentity&) = delete;
  TlsIdentity& operator=(const TlsIdentity&) = delete;
  ~TlsIdentity();
};
StatusOr<std::shared_ptr<const TlsIdentity>> ParseTlsIdentity(const ServerTlsMaterial& tls);

// The files' certificate, key and client CA at every handshake (SSL_CTX_set_cert_cb, which runs
// before the server's CertificateRequest is written and the client's certificate verified),
// through a tls::ServerTlsReloader: renewed files reach new connections, and files that do not
// load leave the last good material in use. Whether clients are verified at all (a client CA
// given, --http-tls-require-client-cert) is decided at start.
class ReloadingCertificate {
 public:
  // `what` names the listener in the reload messages ("unmask-scheduler: the HTTP API").
  ReloadingCertificate(ServerTlsMaterial initial, std::string what, std::function<void(const std::string&)> log = {});
  // Puts the current certificate, chain, key and client CA on `ssl`; false when OpenSSL refuses
  // them.
  bool Apply(SSL* ssl);

 private:
  ServerTlsReloader reloader_;
  std::mutex mu_;
  std::shared_ptr<const ServerTlsMaterial> parsed_from_;
  std::shared_ptr<const TlsIdentity> identity_;
};

// Sets the certificate chain, key, minimum version (TLS 1.2) and client verification of `ctx`;
// with `reloading`, each handshake then takes its certificate and key from it.
Status ConfigureServerContext(SSL_CTX& ctx, const ServerTlsMaterial& tls,
                              ReloadingCertificate* reloading = nullptr);

// A new server context configured from `tls` (TLS 1.2 at least), which follows the files when
// tls.files.refresh_seconds > 0 (its ReloadingCertificate lives as long as the context).
// `what` names the listener in errors and reload messages ("unmask-loader: /metrics").
StatusOr<std::shared_ptr<SSL_CTX>> NewServerSslContext(const ServerTlsMaterial& tls, const std::string& what);

}  // namespace unmask::tls
