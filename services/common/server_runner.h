// The lifecycle every service shares (after Triton's): serve with gRPC health and reflection;
// on the first SIGTERM/SIGINT report NOT_SERVING, stop taking new calls and give in-flight calls
// up to the drain timeout; a second signal exits at once.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/telemetry/telemetry.h"
#include "common/util/status.h"
#include "services/common/tls_options.h"

namespace unmask::services {

// Blocks SIGTERM and SIGINT in the calling thread and every thread it starts later, so that
// only WaitForShutdownSignal sees them. Call first thing in main().
void BlockShutdownSignals();

// Waits for SIGTERM or SIGINT (see BlockShutdownSignals) and says "<service_name>: signal N,
// draining (up to T s)"; from then on a second signal exits the process at once. The caller
// then drains (its server's Shutdown()).
void WaitForShutdownSignal(const std::string& service_name, std::chrono::seconds drain_timeout);

// How a service's Start reports a failure: the error the binary printed (or logged) itself, with
// a code that ExitCodeFor maps to the exit code the binary always used (2: a bad flag, 1: other).
Status StartFailure(const Status& cause, std::string message, int exit_code);
// Prints "<program>: <message>" to stderr, as the mains always did, and returns StartFailure.
Status ReportStartFailure(const std::string& program, const Status& cause, std::string message, int exit_code);
int ExitCodeFor(const Status& start_failure);

// Telemetry::Start, its spans sent over TLS when `otlp_tls` asks for it (the --otlp-tls-* flags:
// the receiver's CA, a client certificate for mutual TLS, the name its certificate carries, and
// refresh_seconds as for the other peers) and /metrics served over HTTPS when `metrics_tls`
// does (--metrics-tls-cert / -key / -ca / -require-client-cert / -refresh-seconds, as a gRPC
// listener's). A bad flag or file is reported as ReportStartFailure does (exit code 2), naming
// the flag.
StatusOr<std::unique_ptr<telemetry::Telemetry>> StartTelemetry(const std::string& program,
                                                               telemetry::TelemetryOptions options,
                                                               const tls::ClientTlsOptions& otlp_tls,
                                                               const tls::ServerTlsOptions& metrics_tls = {});

// Shutdown once, wait for it: what every service's server object shares.
class ShutdownOnce {
 public:
  // Runs `stop` on the first call only; later and concurrent calls return once it has finished.
  void Run(const std::function<void()>& stop);
  // Returns once a Run has finished.
  void Wait();
  bool done() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false, done_ = false;
};

class ServerRunner {
 public:
  explicit ServerRunner(std::string service_name) : service_name_(std::move(service_name)) {}

  void AddService(grpc::Service* service) { services_.push_back(service); }
  // Larger request messages are refused by gRPC with RESOURCE_EXHAUSTED ("received message
  // larger than max (N vs. limit)"); 0 keeps gRPC's default (4 MiB). Call before Start.
  void SetMaxReceiveMessageBytes(int bytes) { max_receive_message_bytes_ = bytes; }
  // Serve TLS (or mutual TLS) with this material; std::nullopt (the default) is plaintext.
  // Call before Start.
  void SetTls(std::optional<tls::ServerTlsMaterial> tls) { tls_ = std::move(tls); }
  // Starts listening on `address` ("host:port"; port 0 picks a free one). Health reports
  // NOT_SERVING until SetServing(true).
  Status Start(const std::string& address);
  int port() const { return port_; }
  void SetServing(bool serving);

  // Waits for a shutdown signal (see BlockShutdownSignals), then drains (Stop).
  void WaitForSignalAndDrain(std::chrono::seconds drain_timeout);
  // Drains now: NOT_SERVING, then Shutdown with the deadline; returns when the server stopped.
  void Drain(std::chrono::seconds drain_timeout);
  // Drain, then "<service_name>: stopped" on stderr.
  void Stop(std::chrono::seconds drain_timeout);
  grpc::Server* server() { return server_.get(); }

 private:
  std::string service_name_;
  std::vector<grpc::Service*> services_;
  std::optional<tls::ServerTlsMaterial> tls_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  int max_receive_message_bytes_ = 0;
};

}  // namespace unmask::services
