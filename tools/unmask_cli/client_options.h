// What every `unmask` subcommand shares: where the scheduler is, how to authenticate, tracing.
#pragma once

#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "services/common/tls_options.h"
#include "tools/unmask_cli/cli_tracing.h"

namespace unmask::cli {

struct ClientOptions {
  std::string scheduler = "127.0.0.1:50051";
  std::string api_key;
  std::string api_key_file;
  double timeout_seconds = 0;  // 0 = none
  CliTracing* tracing = nullptr;  // null: no spans, no traceparent
  tls::ClientTlsOptions tls;      // --tls, --tls-ca, --tls-cert, --tls-key, --tls-server-name

  // The API key from --api-key or the first line of --api-key-file (empty when neither).
  std::string Key() const;
  // A context with the key ("authorization: Bearer ...") and the deadline applied.
  std::unique_ptr<grpc::ClientContext> Context() const;
  // A channel to `address`, over TLS when a --tls* flag is given. Bad TLS flags or files end
  // the command with exit code 2 and a message naming the flag and the file.
  std::shared_ptr<grpc::Channel> Channel(const std::string& address) const;
  // Context() plus the call's client span (see cli_tracing.h); `method` is the full RPC name,
  // e.g. "unmask.v1.Scheduler/Generate", `address` where it goes.
  RpcCall Call(std::string_view method, std::string_view address) const;
};

void AddClientOptions(CLI::App& app, ClientOptions& options);

}  // namespace unmask::cli
