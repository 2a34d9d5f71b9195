#include "services/common/tls_reload.h"

#include <iostream>

namespace unmask::tls {

ServerTlsReloader::ServerTlsReloader(ServerTlsMaterial initial, std::string what,
                                     std::function<void(const std::string&)> log, Clock clock)
    : what_(std::move(what)),
      log_(log ? std::move(log) : [](const std::string& line) { std::cerr << line << std::endl; }),
      clock_(clock ? std::move(clock) : [] { return std::chrono::steady_clock::now(); }),
      current_(std::make_shared<const ServerTlsMaterial>(std::move(initial))) {
  next_look_ = clock_() + std::chrono::seconds(current_->files.refresh_seconds);
}

std::shared_ptr<const ServerTlsMaterial> ServerTlsReloader::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  const int refresh = current_->files.refresh_seconds;
  const auto now = clock_();
  if (refresh <= 0 || now < next_look_) return current_;
  next_look_ = now + std::chrono::seconds(refresh);
  auto loaded = LoadServerTls(current_->files);
  if (!loaded.ok() || !loaded->has_value()) {
    const std::string error = loaded.ok() ? "no certificate" : std::string(loaded.status().message());
    if (error != last_error_) log_(what_ + ": TLS files not reloaded, the last good ones stay in use: " + error);
    last_error_ = error;
    return current_;
  }
  last_error_.clear();
  const ServerTlsMaterial& next = **loaded;
  if (next.cert_chain == current_->cert_chain && next.private_key == current_->private_key &&
      next.client_ca == current_->client_ca)
    return current_;
  current_ = std::make_shared<const ServerTlsMaterial>(next);
  ++generation_;
  log_(what_ + ": TLS files reloaded (" + current_->files.cert_file + ")");
  return current_;
}

std::uint64_t ServerTlsReloader::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

}  // namespace unmask::tls
