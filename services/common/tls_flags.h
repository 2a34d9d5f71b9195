// The TLS flags, spelled the same on every binary (see tls_options.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "services/common/tls_options.h"

namespace unmask::tls {

// --<prefix>tls-cert, --<prefix>tls-key, --<prefix>tls-ca, --<prefix>tls-require-client-cert;
// `prefix` is "" for a service's gRPC listener, "http-" for the scheduler's HTTP API.
// `what` names the listener in the help text.
void AddServerTlsFlags(CLI::App& app, ServerTlsOptions* options, const std::string& prefix = "",
                       const std::string& what = "the gRPC server");

// --<peer>-tls, --<peer>-tls-ca, --<peer>-tls-cert, --<peer>-tls-key, --<peer>-tls-server-name;
// `peer` "" gives --tls, --tls-ca, ... (the CLI, whose only side is the client's).
void AddClientTlsFlags(CLI::App& app, ClientTlsOptions* options, const std::string& peer, const std::string& what);

}  // namespace unmask::tls
