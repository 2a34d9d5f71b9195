// A TLS listener's material that follows its files (ServerTlsOptions::refresh_seconds), for
// servers that pick their certificate per handshake (the HTTP API; the gRPC listeners use gRPC's
// own file watcher, grpc_tls.cc). gRPC-free and OpenSSL-free: it reloads through LoadServerTls,
// so new files pass every check the start-up does.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "services/common/tls_options.h"

namespace unmask::tls {

class ServerTlsReloader {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // `what` names the listener in messages ("unmask-scheduler: the HTTP API"); `log` receives
  // them (default: a line on stderr).
  ServerTlsReloader(ServerTlsMaterial initial, std::string what, std::function<void(const std::string&)> log = {},
                    Clock clock = {});

  // The material to use now. Once files.refresh_seconds have passed since the last look, the
  // files are loaded again: material that differs from the current one and passes every check
  // replaces it (generation + 1, and "<what>: TLS files reloaded" is logged); files that do not
  // load leave it in place and log the error, once per distinct error. Thread-safe.
  std::shared_ptr<const ServerTlsMaterial> Current();
  // How many times the material was replaced.
  std::uint64_t generation() const;

 private:
  const std::string what_;
  const std::function<void(const std::string&)> log_;
  const Clock clock_;
  mutable std::mutex mu_;
  std::shared_ptr<const ServerTlsMaterial> current_;
  std::uint64_t generation_ = 0;
  std::chrono::steady_clock::time_point next_look_;
  std::string last_error_;
};

}  // namespace unmask::tls
