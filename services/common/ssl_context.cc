#include "services/common/ssl_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

namespace unmask::tls {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

BioPtr MemoryBio(const std::string& pem) { return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

Status OpenSslError(const std::string& what) {
  const unsigned long err = ERR_get_error();
  ERR_clear_error();
  return InvalidArgumentError("tls: " + what + (err ? std::string(": ") + ERR_reason_error_string(err) : ""));
}

}  // namespace

TlsIdentity::~TlsIdentity() {
  X509_free(leaf);
  sk_X509_pop_free(chain, X509_free);
  EVP_PKEY_free(key);
  X509_STORE_free(client_store);
  sk_X509_NAME_pop_free(client_names, X509_NAME_free);
}

StatusOr<std::shared_ptr<const TlsIdentity>> ParseTlsIdentity(const ServerTlsMaterial& tls) {
  auto id = std::make_shared<TlsIdentity>();
  {
    BioPtr bio = MemoryBio(tls.cert_chain);
    id->leaf = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
    if (id->leaf == nullptr) return OpenSslError("cannot read the certificate");
    // The rest of the file is the chain sent with it.
    id->chain = sk_X509_new_null();
    while (X509* extra = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      if (sk_X509_push(id->chain, extra) == 0) {
        X509_free(extra);
        return OpenSslError("cannot add a chain certificate");
      }
    }
    ERR_clear_error();
  }
  BioPtr bio = MemoryBio(tls.private_key);
  id->key = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
  if (id->key == nullptr) return OpenSslError("cannot read the private key");
  if (X509_check_private_key(id->leaf, id->key) != 1) return OpenSslError("the key does not fit the certificate");
  if (!tls.client_ca.empty()) {
    id->client_store = X509_STORE_new();
    id->client_names = sk_X509_NAME_new_null();
    if (id->client_store == nullptr || id->client_names == nullptr) return OpenSslError("out of memory");
    BioPtr ca_bio = MemoryBio(tls.client_ca);
    while (X509* ca = PEM_read_bio_X509(ca_bio.get(), nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(id->client_store, ca);
      X509_NAME* name = X509_NAME_dup(X509_get_subject_name(ca));
      if (name != nullptr && sk_X509_NAME_push(id->client_names, name) == 0) X509_NAME_free(name);
      X509_free(ca);
    }
    ERR_clear_error();
  }
  return std::shared_ptr<const TlsIdentity>(std::move(id));
}

ReloadingCertificate::ReloadingCertificate(ServerTlsMaterial initial, std::string what,
                                           std::function<void(const std::string&)> log)
    : reloader_(std::move(initial), std::move(what), std::move(log)) {}

bool ReloadingCertificate::Apply(SSL* ssl) {
  std::shared_ptr<const TlsIdentity> identity;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto material = reloader_.Current();
    if (material != parsed_from_) {
      auto parsed = ParseTlsIdentity(*material);  // checked by LoadServerTls already; parsed once per change
      if (parsed.ok()) identity_ = *parsed;
      parsed_from_ = material;
    }
    identity = identity_;
  }
  if (!identity) return true;  // the context's own
  if (SSL_use_certificate(ssl, identity->leaf) != 1 || SSL_use_PrivateKey(ssl, identity->key) != 1 ||
      SSL_set1_chain(ssl, identity->chain) != 1)
    return false;
  if (identity->client_store == nullptr) return true;
  // The connection's own verify store and CA names (the context's stay as read at start).
  if (SSL_set1_verify_cert_store(ssl, identity->client_store) != 1) return false;
  STACK_OF(X509_NAME)* names = SSL_dup_CA_list(identity->client_names);
  if (names == nullptr) return false;
  SSL_set_client_CA_list(ssl, names);  // takes ownership
  return true;
}

Status ConfigureServerContext(SSL_CTX& ctx, const ServerTlsMaterial& tls, ReloadingCertificate* reloading) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
  // Clients that resume sessions (Node's https.Agent does) are refused by a server that verifies
  // peers without a session id context.
  static const unsigned char kSessionContext[] = "unmask-http";
  SSL_CTX_set_session_id_context(&ctx, kSessionContext, sizeof(kSessionContext) - 1);
  UNMASK_ASSIGN_OR_RETURN(std::shared_ptr<const TlsIdentity> id, ParseTlsIdentity(tls));
  if (SSL_CTX_use_certificate(&ctx, id->leaf) != 1) return OpenSslError("cannot use the certificate");
  if (SSL_CTX_set1_chain(&ctx, id->chain) != 1) return OpenSslError("cannot add a chain certificate");
  if (SSL_CTX_use_PrivateKey(&ctx, id->key) != 1 || SSL_CTX_check_private_key(&ctx) != 1)
    return OpenSslError("the key does not fit the certificate");
  if (reloading != nullptr) {
    SSL_CTX_set_cert_cb(
        &ctx, [](SSL* ssl, void* arg) { return static_cast<ReloadingCertificate*>(arg)->Apply(ssl) ? 1 : 0; },
        reloading);
  }
  if (!tls.client_ca.empty()) {
    X509_STORE* store = SSL_CTX_get_cert_store(&ctx);
    BioPtr bio = MemoryBio(tls.client_ca);
    while (X509* ca = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(store, ca);
      SSL_CTX_add_client_CA(&ctx, ca);  // named in the CertificateRequest
      X509_free(ca);
    }
    ERR_clear_error();
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | (tls.require_client_cert ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), nullptr);
  } else {
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_NONE, nullptr);
  }
  return OkStatus();
}

StatusOr<std::shared_ptr<SSL_CTX>> NewServerSslContext(const ServerTlsMaterial& tls, const std::string& what) {
  SSL_CTX* raw = SSL_CTX_new(TLS_server_method());
  if (raw == nullptr) return OpenSslError(what + ": cannot make a TLS context");
  std::shared_ptr<ReloadingCertificate> reloading;
  if (tls.files.refresh_seconds > 0) reloading = std::make_shared<ReloadingCertificate>(tls, what);
  // The deleter keeps the reloader the context's certificate callback points to.
  std::shared_ptr<SSL_CTX> ctx(raw, [reloading](SSL_CTX* c) { SSL_CTX_free(c); });
  const Status configured = ConfigureServerContext(*ctx, tls, reloading.get());
  if (!configured.ok()) return InvalidArgumentError(what + ": " + configured.message());
  return ctx;
}

}  // namespace unmask::tls
