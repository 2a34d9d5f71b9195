#include "services/scheduler/executor_pool.h"

#include <netdb.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <algorithm>
#include <set>

#include "common/util/host_port.h"
#include "services/common/grpc_tls.h"

namespace unmask::scheduler {

ExecutorPool::ExecutorPool(ExecutorPoolOptions options) : options_(std::move(options)) {}

ExecutorPool::~ExecutorPool() {
  stop_ = true;
  if (poller_.joinable()) poller_.join();
}

void ExecutorPool::Start() {
  PollOnce();
  poller_ = std::thread([this] {
    while (!stop_) {
      std::this_thread::sleep_for(options_.poll_interval);
      if (!stop_) PollOnce();
    }
  });
}

std::vector<std::string> ExecutorPool::Resolve() const {
  std::set<std::string> out(options_.addresses.begin(), options_.addresses.end());
  for (const auto& name : options_.dns_names) {
    const auto parsed = ParseHostPort(name);
    if (!parsed.ok()) continue;
    const std::string host = parsed->host, port = std::to_string(parsed->port);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) continue;
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      char ip[INET6_ADDRSTRLEN] = {};
      const void* src = a->ai_family == AF_INET ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
                                                : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
      if (inet_ntop(a->ai_family, src, ip, sizeof(ip)) == nullptr) continue;
      out.insert(a->ai_family == AF_INET6 ? "[" + std::string(ip) + "]:" + port : std::string(ip) + ":" + port);
    }
    freeaddrinfo(res);
  }
  return {out.begin(), out.end()};
}

std::shared_ptr<v1::Executor::Stub> ExecutorPool::Stub(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& stub = stubs_[address];
  if (!stub) {
    // A job's result with prompt_logprobs holds every prompt token with its alternatives: about
    // 500 bytes a token at 20 of them, past gRPC's 4 MiB default from 8,000 tokens on.
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(kMaxExecutorMessageBytes);
    stub = v1::Executor::NewStub(tls::CreateChannel(address, options_.tls, args));
  }
  return stub;
}

void ExecutorPool::PollOnce() {
  const auto addresses = Resolve();
  std::map<std::string, ExecutorSnapshot> fresh;
  for (const auto& address : addresses) {
    ExecutorSnapshot snap;
    snap.address = address;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + options_.poll_timeout);
    v1::Capacity cap;
    if (Stub(address)->GetCapacity(&ctx, v1::GetCapacityRequest(), &cap).ok()) {
      snap.healthy = true;
      snap.executor_id = cap.executor_id();
      snap.models.assign(cap.models().begin(), cap.models().end());
      snap.running = cap.running_jobs();
      snap.queued = cap.queued_jobs();
      snap.max_concurrent = cap.max_concurrent_jobs();
      snap.budget_bytes = cap.budget_bytes();
      snap.job_budget_bytes = cap.job_budget_bytes();
      snap.job_bytes_in_use = cap.job_bytes_in_use();
      snap.model_config_json = cap.model_config_json();
      snap.precision = cap.precision();
      snap.compute_precision = cap.compute_precision();
      snap.compute_reason = cap.compute_reason();
      snap.device = cap.device();
    }
    fresh[address] = std::move(snap);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    executors_ = std::move(fresh);
    ++changes_;
  }
  room_.notify_all();
}

std::vector<ExecutorSnapshot> ExecutorPool::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ExecutorSnapshot> out;
  for (const auto& [address, snap] : executors_) out.push_back(snap);
  return out;
}

void ExecutorPool::NoteDispatched(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = executors_.find(address);
  if (it != executors_.end()) ++it->second.running;
}

void ExecutorPool::NoteFinished(const std::string& address) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = executors_.find(address);
    // Never below 0: a poll may already have stopped counting it.
    if (it != executors_.end() && it->second.running > 0) --it->second.running;
    ++changes_;
  }
  room_.notify_all();
}

void ExecutorPool::WaitForRoom(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  const std::uint64_t seen = changes_;
  room_.wait_for(lock, timeout, [&] { return changes_ != seen || stop_; });
}

void ExecutorPool::MarkUnhealthy(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = executors_.find(address);
  if (it != executors_.end()) it->second.healthy = false;
}

bool ExecutorPool::WaitForModel(const std::string& model, std::chrono::milliseconds timeout) const {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (true) {
    for (const auto& e : Snapshot()) {
      if (e.healthy && std::find(e.models.begin(), e.models.end(), model) != e.models.end()) return true;
    }
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace unmask::scheduler
