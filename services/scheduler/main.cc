// unmask-scheduler: the public API. Validates, fits requests to memory, keeps every accepted job
// in Redis (or in-process) until it is done, and dispatches to executors. The scheduler itself is
// services/scheduler/scheduler_server.h; this file parses the flags and waits for a signal.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>

#include "common/telemetry/options.h"
#include "services/common/server_runner.h"
#include "services/common/tls_flags.h"
#include "services/scheduler/scheduler_server.h"

int main(int argc, char** argv) {
  using namespace unmask;
  services::BlockShutdownSignals();
  std::signal(SIGPIPE, SIG_IGN);  // hiredis writes with write(2); a closed Redis socket must not kill us
  scheduler::SchedulerServerOptions o;
  auto& options = o.core;
  auto& dispatch = o.dispatch;
  auto& http_options = o.http;
  CLI::App app{"unmask-scheduler: the public API of unmask"};
  app.add_option("--listen", o.listen, "gRPC listen address (port 0 picks one)")->capture_default_str();
  app.add_option("--redis", o.redis, "Redis host:port; empty = the in-process queue (jobs do not survive a restart)");
  app.add_option("--executors", o.executors, "Executor addresses host:port (comma-separated or repeated)");
  app.add_option("--executors-dns", o.executors_dns, "host:port whose host resolves to every executor (a headless service)");
  app.add_option("--dispatch-policy", o.dispatch_policy, "least_busy, round_robin or random")->capture_default_str();
  app.add_option("--per-executor-limit", dispatch.per_executor_limit, "Max jobs per executor (0 = its own limit)");
  app.add_option("--clamp-policy", o.clamp_policy, "off, standard or extreme")->capture_default_str();
  app.add_option("--executor-precision", o.executor_precision, "What executors that do not report their compute type compute in (fp32, bf16), for the memory model")
      ->capture_default_str();
  app.add_option("--model-root", o.model_roots,
                 "Directory of model directories (for config.json and the tokenizer: tokenizer.json, or vocab.json + "
                 "merges.txt)");
  app.add_option("--api-keys-file", o.api_keys_file, "API keys, one SHA-256 per line with an optional name and limits (`unmask keys hash`); unset = no authentication");
  app.add_option("--max-queue", options.max_queue, "Queued jobs at most (then RESOURCE_EXHAUSTED)")->capture_default_str();
  // Request limits (services/scheduler/request_limits.h); each refusal names its flag.
  app.add_option("--grpc-max-receive-bytes", o.grpc_max_receive_bytes, "Larger gRPC request messages get RESOURCE_EXHAUSTED")
      ->capture_default_str()
      ->check(CLI::Range(1024, 1 << 30));
  app.add_option("--max-prompt-bytes", options.limits.max_prompt_bytes, "Prompt text (or chat contents together) at most, bytes")
      ->capture_default_str();
  app.add_option("--max-chat-messages", options.limits.max_chat_messages, "Chat messages per request at most")
      ->capture_default_str();
  app.add_option("--max-prompt-tokens", options.limits.max_prompt_tokens, "Prompt tokens (given or encoded) at most; 0 = the model's length")
      ->capture_default_str();
  app.add_option("--max-queued-jobs-per-client", options.limits.max_queued_jobs_per_client,
                 "Jobs queued or running per client address for callers without an API key; 0 = no limit")
      ->capture_default_str();
  app.add_option("--default-deadline-seconds", options.default_deadline_seconds,
                 "Deadline of jobs whose request sets none; 0 = none")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 7 * 24 * 3600.0));
  app.add_option("--dispatch-threads", dispatch.threads, "Jobs this replica runs at once")->capture_default_str();
  app.add_option("--consumer-id", dispatch.consumer_id, "This replica's name in the Redis consumer group");
  app.add_option("--reaper-min-idle-ms", dispatch.reaper_min_idle_ms, "Idle time after which a delivery is reclaimed")
      ->capture_default_str();
  app.add_option("--max-attempts", dispatch.max_attempts, "Attempts before a job is dead-lettered")->capture_default_str();
  app.add_option("--http-port", o.http_port, "OpenAI-compatible HTTP API on this port (0 picks one); unset = off");
  app.add_option("--http-host", http_options.host, "Address the HTTP API binds")->capture_default_str();
  app.add_option("--http-max-body-bytes", http_options.max_body_bytes, "Larger HTTP request bodies get 413")
      ->capture_default_str();
  app.add_option("--http-threads", http_options.threads, "HTTP requests served at once (a stream holds one; beyond: 429)")
      ->capture_default_str();
  app.add_option("--drain-timeout-seconds", o.drain_timeout_seconds, "Grace period for in-flight calls on SIGTERM")->capture_default_str();
  tls::AddServerTlsFlags(app, &o.tls);
  tls::AddServerTlsFlags(app, &o.http_tls, "http-", "the HTTP API");
  app.get_option("--http-tls-cert")
      ->description("PEM certificate (chain) of the HTTP API, for HTTPS with --http-tls-key (default: with no "
                    "--http-tls-* flag the HTTP API follows the --tls-* flags, plain HTTP without them)");
  tls::AddClientTlsFlags(app, &o.executor_tls, "executor", "the executors");
  telemetry::AddTelemetryOptions(app, &o.telemetry);
  tls::AddClientTlsFlags(app, &o.otlp_tls, "otlp", "the OTLP trace receiver");
  tls::AddClientTlsFlags(app, &o.redis_tls, "redis", "Redis (its tls-port)");
  app.get_option("--redis-tls-refresh-seconds")
      ->description("Must stay 0: each new Redis connection reads --redis-tls-ca, -cert and -key anew (renewed files "
                    "reach new connections without a restart)");
  tls::AddServerTlsFlags(app, &o.metrics_tls, "metrics-", "the /metrics endpoint");
  CLI11_PARSE(app, argc, argv);
  if (const char* password = std::getenv("UNMASK_REDIS_PASSWORD")) o.redis_password = password;

  auto server = scheduler::StartSchedulerServer(o);  // says itself what failed
  if (!server.ok()) return services::ExitCodeFor(server.status());
  services::WaitForShutdownSignal("Scheduler", std::chrono::seconds(o.drain_timeout_seconds));
  (*server)->Shutdown();
  return 0;
}
