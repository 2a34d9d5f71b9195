#include "tests/telemetry/test_collector.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

namespace unmask::telemetry::testing {

TestCollector::TestCollector(std::shared_ptr<grpc::ServerCredentials> credentials) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", std::move(credentials), &port);
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
  if (!server_ || port == 0) throw std::runtime_error("test collector: cannot listen");
  endpoint_ = "127.0.0.1:" + std::to_string(port);
}

TestCollector::~TestCollector() {
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
}

grpc::Status TestCollector::Export(grpc::ServerContext*, const otlp::collector::trace::v1::ExportTraceServiceRequest* req,
                                   otlp::collector::trace::v1::ExportTraceServiceResponse* resp) {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (const auto& rs : req->resource_spans()) {
    std::string service;
    for (const auto& kv : rs.resource().attributes()) {
      if (kv.key() == "service.name") service = kv.value().string_value();
    }
    for (const auto& ss : rs.scope_spans()) {
      n += static_cast<std::size_t>(ss.spans_size());
      if (count_only_) continue;
      for (const auto& s : ss.spans()) spans_.push_back({service, ss.scope().name(), s});
    }
  }
  span_count_ += n;
  batch_sizes_.push_back(n);
  max_request_bytes_ = std::max(max_request_bytes_, req->ByteSizeLong());
  if (reject_ > 0) {
    resp->mutable_partial_success()->set_rejected_spans(reject_);
    resp->mutable_partial_success()->set_error_message("test collector rejects " + std::to_string(reject_));
  }
  cv_.notify_all();
  return grpc::Status::OK;
}

bool TestCollector::WaitForSpans(std::size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return span_count_ >= n; });
}

std::vector<ReceivedSpan> TestCollector::spans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return spans_;
}

std::size_t TestCollector::span_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return span_count_;
}

std::size_t TestCollector::request_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batch_sizes_.size();
}

std::size_t TestCollector::max_request_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_request_bytes_;
}

std::vector<std::size_t> TestCollector::batch_sizes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batch_sizes_;
}

void TestCollector::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  spans_.clear();
  batch_sizes_.clear();
  span_count_ = 0;
  max_request_bytes_ = 0;
}

void TestCollector::set_reject_per_request(std::int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  reject_ = n;
}

void TestCollector::set_count_only(bool count_only) {
  std::lock_guard<std::mutex> lock(mu_);
  count_only_ = count_only;
}

int UnusedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("UnusedPort: cannot bind");
  }
  const int port = ntohs(addr.sin_port);
  ::close(fd);  // never listened on: connections to it are refused
  return port;
}

HttpResponse HttpGet(int port, const std::string& path) {
  HttpResponse out;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return out;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return out;
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n\r\n";
  if (::send(fd, request.data(), request.size(), 0) != static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return out;
  }
  std::string raw;
  char buf[4096];
  while (true) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  const auto header_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/", 0) != 0 || header_end == std::string::npos) return out;
  out.status = std::stoi(raw.substr(raw.find(' ') + 1, 3));
  out.headers = raw.substr(0, header_end);
  out.body = raw.substr(header_end + 4);
  return out;
}

}  // namespace unmask::telemetry::testing
