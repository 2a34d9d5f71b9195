#include "services/common/tls_flags.h"

namespace unmask::tls {

void AddServerTlsFlags(CLI::App& app, ServerTlsOptions* o, const std::string& prefix, const std::string& what) {
  const std::string f = "--" + prefix + "tls-";
  o->flag_prefix = f;
  app.add_option(f + "cert", o->cert_file,
                 "PEM certificate (chain) of " + what + "; with " + f + "key it serves TLS (default: plaintext)");
  app.add_option(f + "key", o->key_file, "PEM private key of " + f + "cert");
  app.add_option(f + "ca", o->ca_file, "PEM CA certificate(s) that client certificates of " + what + " must chain to");
  app.add_flag(f + "require-client-cert", o->require_client_cert,
               "Mutual TLS: refuse clients of " + what + " without a certificate from " + f + "ca");
  app.add_option(f + "refresh-seconds", o->refresh_seconds,
                 "Read " + f + "cert, " + f + "key and " + f + "ca again every N seconds; new connections to " + what +
                     " get a renewed certificate without a restart (files that do not load are refused and the last "
                     "good ones kept). Default 0: read once at start");
}

void AddClientTlsFlags(CLI::App& app, ClientTlsOptions* o, const std::string& peer, const std::string& what) {
  const std::string f = "--" + (peer.empty() ? std::string() : peer + "-") + "tls";
  o->flag_prefix = f + "-";
  app.add_flag(f, o->enabled, "Connect to " + what + " over TLS (implied by the other " + f + "-* flags)");
  app.add_option(f + "-ca", o->ca_file,
                 "PEM CA certificate(s) that the certificate of " + what + " must chain to (default: the system's roots)");
  app.add_option(f + "-cert", o->cert_file, "PEM client certificate for " + what + " (for mutual TLS)");
  app.add_option(f + "-key", o->key_file, "PEM private key of " + f + "-cert");
  app.add_option(f + "-server-name", o->server_name,
                 "Name the certificate of " + what + " must carry (default: the host of the address)");
  app.add_option(f + "-refresh-seconds", o->refresh_seconds,
                 "Read " + f + "-ca, " + f + "-cert and " + f + "-key again every N seconds; new connections to " +
                     what + " use renewed files without a restart. Default 0: read once at start");
}

}  // namespace unmask::tls
