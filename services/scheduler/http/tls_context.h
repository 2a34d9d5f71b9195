// The HTTP API's TLS: an OpenSSL server context from loaded material (services/common/tls_options.h),
// for cpp-httplib's SSLServer. Mutual TLS refuses a client without a certificate from the CA
// during the handshake.
#pragma once

#include <openssl/ssl.h>

#include "common/util/status.h"
#include "services/common/tls_options.h"

namespace unmask::scheduler::http {

// Sets the certificate chain, key, minimum version (TLS 1.2) and client verification of `ctx`.
Status ConfigureServerContext(SSL_CTX& ctx, const tls::ServerTlsMaterial& tls);

}  // namespace unmask::scheduler::http
