#include "services/scheduler/http/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

namespace unmask::scheduler::http {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

BioPtr MemoryBio(const std::string& pem) { return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

Status OpenSslError(const std::string& what) {
  const unsigned long err = ERR_get_error();
  ERR_clear_error();
  return InvalidArgumentError("http tls: " + what + (err ? std::string(": ") + ERR_reason_error_string(err) : ""));
}

}  // namespace

Status ConfigureServerContext(SSL_CTX& ctx, const tls::ServerTlsMaterial& tls) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
  // Clients that resume sessions (Node's https.Agent does) are refused by a server that verifies
  // peers without a session id context.
  static const unsigned char kSessionContext[] = "unmask-http";
  SSL_CTX_set_session_id_context(&ctx, kSessionContext, sizeof(kSessionContext) - 1);
  {
    BioPtr bio = MemoryBio(tls.cert_chain);
    X509* leaf = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
    if (leaf == nullptr) return OpenSslError("cannot read the certificate");
    const int used = SSL_CTX_use_certificate(&ctx, leaf);
    X509_free(leaf);
    if (used != 1) return OpenSslError("cannot use the certificate");
    // The rest of the file is the chain sent with it.
    while (X509* extra = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      if (SSL_CTX_add0_chain_cert(&ctx, extra) != 1) {
        X509_free(extra);
        return OpenSslError("cannot add a chain certificate");
      }
    }
    ERR_clear_error();
  }
  {
    BioPtr bio = MemoryBio(tls.private_key);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
    if (key == nullptr) return OpenSslError("cannot read the private key");
    const int used = SSL_CTX_use_PrivateKey(&ctx, key);
    EVP_PKEY_free(key);
    if (used != 1 || SSL_CTX_check_private_key(&ctx) != 1) return OpenSslError("the key does not fit the certificate");
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

}  // namespace unmask::scheduler::http
