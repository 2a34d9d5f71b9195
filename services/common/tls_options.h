// TLS settings of every gRPC server and client (and the scheduler's HTTP API), free of gRPC:
// which PEM files the flags name, and their contents once read and checked. Plaintext is the
// default: options with no file set load to std::nullopt. grpc_tls.h turns the loaded material
// into gRPC credentials; the HTTP server into an OpenSSL context.
//
// Flags (tls_flags.h adds them; one scheme on every binary):
//   servers  --tls-cert FILE --tls-key FILE [--tls-ca FILE] [--tls-require-client-cert]
//            [--tls-refresh-seconds N]
//   clients  --<peer>-tls  --<peer>-tls-ca FILE  --<peer>-tls-cert FILE --<peer>-tls-key FILE
//            --<peer>-tls-server-name NAME   (the `unmask` CLI: no "<peer>-" part)
#pragma once

#include <optional>
#include <string>

#include "common/util/status.h"

namespace unmask::tls {

// A server's side. TLS when cert_file is set; then key_file is required. ca_file: the CA(s)
// whose client certificates are accepted (verified when a client presents one); with
// require_client_cert a client without such a certificate is refused (mutual TLS).
struct ServerTlsOptions {
  std::string cert_file, key_file, ca_file;
  bool require_client_cert = false;
  // > 0: the files are read again every this many seconds, and new connections get what they
  // then hold (a renewed certificate, e.g. cert-manager's, without a restart). Replace them
  // atomically (a Kubernetes Secret volume does): on a gRPC listener (gRPC's file watcher) a
  // key that does not fit its certificate fails new handshakes until the pair fits again; the
  // HTTP API refuses such files with an error on stderr and keeps the last good ones.
  // 0: read once, at start.
  int refresh_seconds = 0;
  std::string flag_prefix = "--tls-";  // how the flags are spelled, for error messages

  bool given() const {
    return !cert_file.empty() || !key_file.empty() || !ca_file.empty() || require_client_cert || refresh_seconds != 0;
  }
};

// A client's side of one peer. TLS when `enabled` or any file or the server name is set.
// ca_file: the CA(s) the server's certificate must chain to (empty: the system's roots);
// cert_file + key_file: this client's certificate, for servers that require one;
// server_name: the name the server's certificate must carry, instead of the address's host
// (e.g. when dialing pod IPs resolved from a headless Service).
struct ClientTlsOptions {
  bool enabled = false;
  std::string ca_file, cert_file, key_file, server_name;
  // > 0: ca_file, cert_file and key_file are read again this often, and new connections (a
  // channel's reconnections included) use what they then hold, as ServerTlsOptions'.
  int refresh_seconds = 0;
  std::string flag_prefix = "--tls-";  // e.g. "--loader-tls-"

  bool wanted() const {
    return enabled || !ca_file.empty() || !cert_file.empty() || !key_file.empty() || !server_name.empty() ||
           refresh_seconds != 0;
  }
};

// PEM text, read and checked: every certificate parses, the key parses and belongs to the
// first certificate of the chain.
struct ServerTlsMaterial {
  std::string cert_chain, private_key, client_ca;
  bool require_client_cert = false;
  ServerTlsOptions files;  // where it was read from, for a refresh (files.refresh_seconds)
};

struct ClientTlsMaterial {
  std::string root_ca;  // empty: the system's roots
  std::string cert_chain, private_key;  // both empty: no client certificate
  std::string server_name;
  ClientTlsOptions files;  // where it was read from, for a refresh (files.refresh_seconds)
};

// std::nullopt: plaintext. Errors name the flag and the file ("--tls-key /x/key.pem: cannot
// read it: No such file or directory"), and flags that make no sense together.
StatusOr<std::optional<ServerTlsMaterial>> LoadServerTls(const ServerTlsOptions& options);
StatusOr<std::optional<ClientTlsMaterial>> LoadClientTls(const ClientTlsOptions& options);

// "plaintext", "TLS" or "mutual TLS: client certificates required", for start-up lines.
std::string Describe(const std::optional<ServerTlsMaterial>& tls);

// PEM checks, for tests and the loaders above. `what` names the source in errors.
Status CheckCertificates(const std::string& pem, const std::string& what);
Status CheckKeyMatches(const std::string& key_pem, const std::string& cert_pem, const std::string& key_what,
                       const std::string& cert_what);

}  // namespace unmask::tls
