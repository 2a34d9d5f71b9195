#include "services/common/tls_options.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

namespace unmask::tls {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

BioPtr MemoryBio(const std::string& pem) { return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

// The flag and the file, as errors name them: "--tls-key /etc/unmask/tls/tls.key".
std::string Named(const std::string& prefix, const std::string& flag, const std::string& file) {
  return prefix + flag + " " + file;
}

StatusOr<std::string> ReadFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgumentError(what + ": cannot read it: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return InvalidArgumentError(what + ": cannot read it: " + std::strerror(errno));
  std::string s = text.str();
  if (s.empty()) return InvalidArgumentError(what + ": the file is empty (expected PEM)");
  return s;
}

X509Ptr FirstCertificate(const std::string& pem) {
  BioPtr bio = MemoryBio(pem);
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

}  // namespace

Status CheckCertificates(const std::string& pem, const std::string& what) {
  BioPtr bio = MemoryBio(pem);
  int count = 0;
  while (true) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) break;
    ++count;
  }
  const unsigned long err = ERR_peek_last_error();
  ERR_clear_error();
  // Running out of input after the last certificate is the normal end.
  const bool clean_end = err == 0 || ERR_GET_REASON(err) == PEM_R_NO_START_LINE;
  if (count == 0)
    return InvalidArgumentError(what + ": no PEM certificate in it (expected \"-----BEGIN CERTIFICATE-----\")");
  if (!clean_end)
    return InvalidArgumentError(what + ": certificate " + std::to_string(count + 1) +
                                " does not parse: " + ERR_reason_error_string(err));
  return OkStatus();
}

Status CheckKeyMatches(const std::string& key_pem, const std::string& cert_pem, const std::string& key_what,
                       const std::string& cert_what) {
  BioPtr bio = MemoryBio(key_pem);
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!key)
    return InvalidArgumentError(key_what +
                                ": no unencrypted PEM private key in it (expected \"-----BEGIN PRIVATE KEY-----\" or "
                                "\"-----BEGIN EC/RSA PRIVATE KEY-----\")");
  X509Ptr cert = FirstCertificate(cert_pem);
  ERR_clear_error();
  if (!cert) return InvalidArgumentError(cert_what + ": no PEM certificate in it");
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return InvalidArgumentError(key_what + ": this key does not belong to the certificate in " + cert_what);
  }
  return OkStatus();
}

StatusOr<std::optional<ServerTlsMaterial>> LoadServerTls(const ServerTlsOptions& o) {
  const std::string& p = o.flag_prefix;
  if (o.cert_file.empty()) {
    if (!o.key_file.empty()) return InvalidArgumentError(p + "key is given without " + p + "cert");
    if (!o.ca_file.empty())
      return InvalidArgumentError(p + "ca is given without " + p + "cert and " + p +
                                  "key: a server checks client certificates only over TLS");
    if (o.require_client_cert)
      return InvalidArgumentError(p + "require-client-cert needs " + p + "cert, " + p + "key and " + p + "ca");
    if (o.refresh_seconds != 0)
      return InvalidArgumentError(p + "refresh-seconds is given without " + p + "cert and " + p + "key: plaintext has no files to read");
    return std::optional<ServerTlsMaterial>();
  }
  if (o.key_file.empty())
    return InvalidArgumentError(Named(p, "cert", o.cert_file) + " is given without " + p +
                                "key (the certificate's private key)");
  if (o.require_client_cert && o.ca_file.empty())
    return InvalidArgumentError(p + "require-client-cert needs " + p + "ca (the CA that signs client certificates)");
  const std::string cert_what = Named(p, "cert", o.cert_file), key_what = Named(p, "key", o.key_file);
  if (o.refresh_seconds < 0)
    return InvalidArgumentError(p + "refresh-seconds " + std::to_string(o.refresh_seconds) +
                                ": expected 0 (read the files once) or a number of seconds");
  ServerTlsMaterial m;
  m.require_client_cert = o.require_client_cert;
  m.files = o;
  UNMASK_ASSIGN_OR_RETURN(m.cert_chain, ReadFile(o.cert_file, cert_what));
  UNMASK_ASSIGN_OR_RETURN(m.private_key, ReadFile(o.key_file, key_what));
  UNMASK_RETURN_IF_ERROR(CheckCertificates(m.cert_chain, cert_what));
  UNMASK_RETURN_IF_ERROR(CheckKeyMatches(m.private_key, m.cert_chain, key_what, cert_what));
  if (!o.ca_file.empty()) {
    const std::string ca_what = Named(p, "ca", o.ca_file);
    UNMASK_ASSIGN_OR_RETURN(m.client_ca, ReadFile(o.ca_file, ca_what));
    UNMASK_RETURN_IF_ERROR(CheckCertificates(m.client_ca, ca_what));
  }
  return std::optional<ServerTlsMaterial>(std::move(m));
}

StatusOr<std::optional<ClientTlsMaterial>> LoadClientTls(const ClientTlsOptions& o) {
  if (!o.wanted()) return std::optional<ClientTlsMaterial>();
  const std::string& p = o.flag_prefix;
  if (o.cert_file.empty() != o.key_file.empty())
    return InvalidArgumentError(o.cert_file.empty()
                                    ? Named(p, "key", o.key_file) + " is given without " + p + "cert"
                                    : Named(p, "cert", o.cert_file) + " is given without " + p + "key");
  if (o.refresh_seconds < 0)
    return InvalidArgumentError(p + "refresh-seconds " + std::to_string(o.refresh_seconds) +
                                ": expected 0 (read the files once) or a number of seconds");
  if (o.refresh_seconds > 0 && o.ca_file.empty() && o.cert_file.empty())
    return InvalidArgumentError(p + "refresh-seconds is given without " + p + "ca or " + p + "cert: no files to read");
  ClientTlsMaterial m;
  m.server_name = o.server_name;
  m.files = o;
  if (!o.ca_file.empty()) {
    const std::string ca_what = Named(p, "ca", o.ca_file);
    UNMASK_ASSIGN_OR_RETURN(m.root_ca, ReadFile(o.ca_file, ca_what));
    UNMASK_RETURN_IF_ERROR(CheckCertificates(m.root_ca, ca_what));
  }
  if (!o.cert_file.empty()) {
    const std::string cert_what = Named(p, "cert", o.cert_file), key_what = Named(p, "key", o.key_file);
    UNMASK_ASSIGN_OR_RETURN(m.cert_chain, ReadFile(o.cert_file, cert_what));
    UNMASK_ASSIGN_OR_RETURN(m.private_key, ReadFile(o.key_file, key_what));
    UNMASK_RETURN_IF_ERROR(CheckCertificates(m.cert_chain, cert_what));
    UNMASK_RETURN_IF_ERROR(CheckKeyMatches(m.private_key, m.cert_chain, key_what, cert_what));
  }
  return std::optional<ClientTlsMaterial>(std::move(m));
}

std::string Describe(const std::optional<ServerTlsMaterial>& tls) {
  if (!tls) return "plaintext";
  const std::string refresh =
      tls->files.refresh_seconds > 0 ? "; files re-read every " + std::to_string(tls->files.refresh_seconds) + " s" : "";
  if (tls->require_client_cert) return "mutual TLS: client certificates required" + refresh;
  return (tls->client_ca.empty() ? "TLS" : "TLS, client certificates verified when presented") + refresh;
}

}  // namespace unmask::tls
