#include "services/common/server_runner.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <thread>

#include "services/common/grpc_tls.h"

namespace unmask::services {

void BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

Status ServerRunner::Start(const std::string& address) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, tls::ServerCredentials(tls_), &port_);
  for (auto* s : services_) builder.RegisterService(s);
  if (max_receive_message_bytes_ > 0) builder.SetMaxReceiveMessageSize(max_receive_message_bytes_);
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) return UnavailableError(service_name_ + ": cannot listen on " + address);
  SetServing(false);
  return OkStatus();
}

void ServerRunner::SetServing(bool serving) {
  if (!server_) return;
  auto* health = server_->GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus(serving);                      // the overall "" service
  health->SetServingStatus("unmask.v1." + service_name_, serving);
}

void ServerRunner::Drain(std::chrono::seconds drain_timeout) {
  if (!server_) return;
  SetServing(false);
  server_->Shutdown(std::chrono::system_clock::now() + drain_timeout);
  server_->Wait();
}

void ServerRunner::WaitForSignalAndDrain(std::chrono::seconds drain_timeout) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sig = 0;
  sigwait(&set, &sig);
  std::cerr << service_name_ << ": signal " << sig << ", draining (up to " << drain_timeout.count() << " s)\n";
  // A second signal during the drain exits at once.
  std::thread([set]() mutable {
    int again = 0;
    sigwait(&set, &again);
    std::cerr << "second signal: exiting now\n";
    _exit(1);
  }).detach();
  Drain(drain_timeout);
  std::cerr << service_name_ << ": stopped\n";
}

}  // namespace unmask::services
