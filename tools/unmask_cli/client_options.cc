#include "tools/unmask_cli/client_options.h"

#include <fstream>
#include <iostream>

#include "services/common/grpc_tls.h"
#include "services/common/tls_flags.h"

namespace unmask::cli {

std::string ClientOptions::Key() const {
  if (!api_key.empty()) return api_key;
  if (api_key_file.empty()) return "";
  std::ifstream in(api_key_file);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

std::unique_ptr<grpc::ClientContext> ClientOptions::Context() const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  const std::string key = Key();
  if (!key.empty()) ctx->AddMetadata("authorization", "Bearer " + key);
  if (timeout_seconds > 0)
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(static_cast<std::int64_t>(timeout_seconds * 1000)));
  return ctx;
}

std::shared_ptr<grpc::Channel> ClientOptions::Channel(const std::string& address) const {
  auto material = tls::LoadClientTls(tls);
  if (!material.ok()) {
    std::cerr << "unmask: " << material.status().message() << "\n";
    throw CLI::RuntimeError(2);
  }
  return tls::CreateChannel(address, *material);
}

RpcCall ClientOptions::Call(std::string_view method, std::string_view address) const {
  auto ctx = Context();
  telemetry::Span span;
  if (tracing != nullptr) span = tracing->StartCall(ctx.get(), method, address);
  return RpcCall(std::move(ctx), std::move(span));
}

void AddClientOptions(CLI::App& app, ClientOptions& o) {
  app.add_option("--scheduler", o.scheduler, "Scheduler address")->capture_default_str()->envname("UNMASK_SCHEDULER");
  app.add_option("--api-key", o.api_key, "API key")->envname("UNMASK_API_KEY");
  app.add_option("--api-key-file", o.api_key_file, "File whose first line is the API key");
  app.add_option("--timeout", o.timeout_seconds, "Call deadline in seconds (0 = none)");
  tls::AddClientTlsFlags(app, &o.tls, "", "the service");
  app.get_option("--tls-ca")->envname("UNMASK_TLS_CA");
  app.get_option("--tls-cert")->envname("UNMASK_TLS_CERT");
  app.get_option("--tls-key")->envname("UNMASK_TLS_KEY");
  app.get_option("--tls-server-name")->envname("UNMASK_TLS_SERVER_NAME");
}

}  // namespace unmask::cli
