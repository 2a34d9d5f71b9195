// gRPC credentials from loaded TLS material (tls_options.h): the one place that turns PEM text
// into ServerCredentials and ChannelCredentials. std::nullopt means plaintext.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>

#include "services/common/tls_options.h"

namespace unmask::tls {

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const std::optional<ServerTlsMaterial>& tls);

// A channel to `address`, over TLS when `tls` is set (with its server-name override).
std::shared_ptr<grpc::Channel> CreateChannel(const std::string& address, const std::optional<ClientTlsMaterial>& tls,
                                             grpc::ChannelArguments args = {});

}  // namespace unmask::tls
