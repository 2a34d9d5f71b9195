#include "services/common/server_runner.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <thread>

#include "services/common/grpc_tls.h"
#include "services/common/ssl_context.h"

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

void WaitForShutdownSignal(const std::string& service_name, std::chrono::seconds drain_timeout) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sig = 0;
  sigwait(&set, &sig);
  std::cerr << service_name << ": signal " << sig << ", draining (up to " << drain_timeout.count() << " s)\n";
  // A second signal during the drain exits at once.
  std::thread([set]() mutable {
    int again = 0;
    sigwait(&set, &again);
    std::cerr << "second signal: exiting now\n";
    _exit(1);
  }).detach();
}

void ServerRunner::Stop(std::chrono::seconds drain_timeout) {
  Drain(drain_timeout);
  std::cerr << service_name_ << ": stopped\n";
}

void ServerRunner::WaitForSignalAndDrain(std::chrono::seconds drain_timeout) {
  WaitForShutdownSignal(service_name_, drain_timeout);
  Stop(drain_timeout);
}

Status StartFailure(const Status& cause, std::string message, int exit_code) {
  if (exit_code == 2) return InvalidArgumentError(std::move(message));
  const bool keeps_code = !cause.ok() && cause.code() != StatusCode::kInvalidArgument;
  return Status(keeps_code ? cause.code() : StatusCode::kFailedPrecondition, std::move(message));
}

Status ReportStartFailure(const std::string& program, const Status& cause, std::string message, int exit_code) {
  std::cerr << program << ": " << message << std::endl;
  return StartFailure(cause, std::move(message), exit_code);
}

StatusOr<std::unique_ptr<telemetry::Telemetry>> StartTelemetry(const std::string& program,
                                                               telemetry::TelemetryOptions options,
                                                               const tls::ClientTlsOptions& otlp_tls,
                                                               const tls::ServerTlsOptions& metrics_tls) {
  auto metrics = tls::LoadServerTls(metrics_tls);
  if (!metrics.ok()) return ReportStartFailure(program, metrics.status(), metrics.status().message(), 2);
  if (*metrics) {
    if (options.metrics_listen.empty()) {
      const Status s = InvalidArgumentError(metrics_tls.flag_prefix + "*: given with an empty --metrics-listen");
      return ReportStartFailure(program, s, s.message(), 2);
    }
    auto ctx = tls::NewServerSslContext(**metrics, program + ": /metrics");
    if (!ctx.ok()) return ReportStartFailure(program, ctx.status(), ctx.status().message(), 2);
    options.metrics_tls = *ctx;
    options.metrics_security = (*metrics)->require_client_cert ? "mutual TLS" : "TLS";
  }
  auto material = tls::LoadClientTls(otlp_tls);
  if (!material.ok()) return ReportStartFailure(program, material.status(), material.status().message(), 2);
  if (*material) {
    if (options.otlp_endpoint.empty()) {
      const Status s = InvalidArgumentError(otlp_tls.flag_prefix + "*: given without --otlp-endpoint");
      return ReportStartFailure(program, s, s.message(), 2);
    }
    options.otlp_security = (*material)->cert_chain.empty() ? "TLS" : "mutual TLS";
    options.otlp_channel = [tls = **material](const std::string& endpoint, const grpc::ChannelArguments& args) {
      return tls::CreateChannel(endpoint, tls, args);
    };
  }
  auto started = telemetry::Telemetry::Start(options);
  if (!started.ok()) {
    const Status& s = started.status();
    return ReportStartFailure(program, s, s.ToString(), s.code() == StatusCode::kInvalidArgument ? 2 : 1);
  }
  return std::move(*started);
}

int ExitCodeFor(const Status& start_failure) {
  if (start_failure.ok()) return 0;
  return start_failure.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

void ShutdownOnce::Run(const std::function<void()>& stop) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (started_) {
      cv_.wait(lock, [this] { return done_; });
      return;
    }
    started_ = true;
  }
  stop();
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  cv_.notify_all();
}

void ShutdownOnce::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return done_; });
}

bool ShutdownOnce::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

}  // namespace unmask::services
