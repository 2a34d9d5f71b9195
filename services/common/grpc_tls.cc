#include "services/common/grpc_tls.h"

namespace unmask::tls {

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const std::optional<ServerTlsMaterial>& tls) {
  if (!tls) return grpc::InsecureServerCredentials();
  grpc_ssl_client_certificate_request_type request = GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
  if (tls->require_client_cert) {
    request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  } else if (!tls->client_ca.empty()) {
    request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  grpc::SslServerCredentialsOptions options(request);
  options.pem_root_certs = tls->client_ca;
  options.pem_key_cert_pairs.push_back({tls->private_key, tls->cert_chain});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::Channel> CreateChannel(const std::string& address, const std::optional<ClientTlsMaterial>& tls,
                                             grpc::ChannelArguments args) {
  if (!tls) return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls->root_ca;
  options.pem_private_key = tls->private_key;
  options.pem_cert_chain = tls->cert_chain;
  if (!tls->server_name.empty()) args.SetSslTargetNameOverride(tls->server_name);
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(options), args);
}

}  // namespace unmask::tls
