#include "services/common/grpc_tls.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

namespace unmask::tls {
namespace {

// gRPC's own file watcher: it reads the files again every `seconds` and hands new connections
// what they hold. gRPC 1.51 does not check that the key fits its certificate: a pair that does
// not fit fails new handshakes until it fits again (hence: replace the files atomically).
std::shared_ptr<grpc::experimental::FileWatcherCertificateProvider> Watcher(const std::string& key,
                                                                            const std::string& cert,
                                                                            const std::string& ca, int seconds) {
  return std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(key, cert, ca,
                                                                              static_cast<unsigned int>(seconds));
}

std::shared_ptr<grpc::ServerCredentials> WatchedCredentials(const ServerTlsMaterial& tls,
                                                            grpc_ssl_client_certificate_request_type request) {
  const ServerTlsOptions& f = tls.files;
  grpc::experimental::TlsServerCredentialsOptions options(Watcher(f.key_file, f.cert_file, f.ca_file, f.refresh_seconds));
  options.watch_identity_key_cert_pairs();
  if (!f.ca_file.empty()) options.watch_root_certs();
  options.set_cert_request_type(request);
  return grpc::experimental::TlsServerCredentials(options);
}

}  // namespace

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const std::optional<ServerTlsMaterial>& tls) {
  if (!tls) return grpc::InsecureServerCredentials();
  grpc_ssl_client_certificate_request_type request = GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
  if (tls->require_client_cert) {
    request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  } else if (!tls->client_ca.empty()) {
    request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  if (tls->files.refresh_seconds > 0) return WatchedCredentials(*tls, request);
  grpc::SslServerCredentialsOptions options(request);
  options.pem_root_certs = tls->client_ca;
  options.pem_key_cert_pairs.push_back({tls->private_key, tls->cert_chain});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::Channel> CreateChannel(const std::string& address, const std::optional<ClientTlsMaterial>& tls,
                                             grpc::ChannelArguments args) {
  if (!tls) return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  if (tls->files.refresh_seconds > 0) {
    const ClientTlsOptions& f = tls->files;
    grpc::experimental::TlsChannelCredentialsOptions options;
    options.set_certificate_provider(Watcher(f.key_file, f.cert_file, f.ca_file, f.refresh_seconds));
    if (!f.cert_file.empty()) options.watch_identity_key_cert_pairs();
    if (!f.ca_file.empty()) options.watch_root_certs();  // else the system's roots
    if (!tls->server_name.empty()) args.SetSslTargetNameOverride(tls->server_name);
    return grpc::CreateCustomChannel(address, grpc::experimental::TlsCredentials(options), args);
  }
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls->root_ca;
  options.pem_private_key = tls->private_key;
  options.pem_cert_chain = tls->cert_chain;
  if (!tls->server_name.empty()) args.SetSslTargetNameOverride(tls->server_name);
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(options), args);
}

}  // namespace unmask::tls
