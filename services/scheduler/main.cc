// unmask-scheduler: the public API. Validates, fits requests to memory, keeps every accepted job
// in Redis (or in-process) until it is done, and dispatches to executors.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "common/auth/api_keys.h"
#include "common/jobs/memory_job_store.h"
#include "common/jobs/redis_job_store.h"
#include "common/telemetry/options.h"
#include "services/common/server_runner.h"
#include "services/common/tls_flags.h"
#include "services/scheduler/clamp_adapter.h"
#include "services/scheduler/executor_pool.h"
#include "services/scheduler/http/http_server.h"
#include "services/scheduler/job_dispatcher.h"
#include "services/scheduler/scheduler_core.h"
#include "services/scheduler/scheduler_grpc.h"

namespace {

std::vector<std::string> SplitCommas(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    std::stringstream in(item);
    std::string part;
    while (std::getline(in, part, ',')) {
      if (!part.empty()) out.push_back(part);
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace unmask;
  services::BlockShutdownSignals();
  std::signal(SIGPIPE, SIG_IGN);  // hiredis writes with write(2); a closed Redis socket must not kill us
  std::string listen = "0.0.0.0:50051", redis, dispatch_policy = "least_busy", clamp_policy = "standard";
  std::string api_keys_file, executor_precision = "bf16";
  std::vector<std::string> executors, executors_dns, model_roots;
  int drain_seconds = 30;
  int http_port = -1;
  scheduler::http::HttpServerOptions http_options;
  scheduler::SchedulerOptions options;
  scheduler::DispatcherOptions dispatch;
  dispatch.consumer_id = "scheduler-" + std::to_string(::getpid());
  CLI::App app{"unmask-scheduler: the public API of unmask"};
  app.add_option("--listen", listen, "gRPC listen address (port 0 picks one)")->capture_default_str();
  app.add_option("--redis", redis, "Redis host:port; empty = the in-process queue (jobs do not survive a restart)");
  app.add_option("--executors", executors, "Executor addresses host:port (comma-separated or repeated)");
  app.add_option("--executors-dns", executors_dns, "host:port whose host resolves to every executor (a headless service)");
  app.add_option("--dispatch-policy", dispatch_policy, "least_busy, round_robin or random")->capture_default_str();
  app.add_option("--per-executor-limit", dispatch.per_executor_limit, "Max jobs per executor (0 = its own limit)");
  app.add_option("--clamp-policy", clamp_policy, "off, standard or extreme")->capture_default_str();
  app.add_option("--executor-precision", executor_precision, "What executors compute in (fp32, bf16), for the memory model")
      ->capture_default_str();
  app.add_option("--model-root", model_roots, "Directory of model directories (for tokenizer.json and config.json)");
  app.add_option("--api-keys-file", api_keys_file, "API keys, one SHA-256 per line with an optional name and limits (`unmask keys hash`); unset = no authentication");
  app.add_option("--max-queue", options.max_queue, "Queued jobs at most (then RESOURCE_EXHAUSTED)")->capture_default_str();
  // Request limits (services/scheduler/request_limits.h); each refusal names its flag.
  int grpc_max_receive_bytes = 4 << 20;
  app.add_option("--grpc-max-receive-bytes", grpc_max_receive_bytes, "Larger gRPC request messages get RESOURCE_EXHAUSTED")
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
  app.add_option("--default-gen-length", options.default_gen_length)->capture_default_str();
  app.add_option("--default-block-length", options.default_block_length)->capture_default_str();
  app.add_option("--dispatch-threads", dispatch.threads, "Jobs this replica runs at once")->capture_default_str();
  app.add_option("--consumer-id", dispatch.consumer_id, "This replica's name in the Redis consumer group");
  app.add_option("--reaper-min-idle-ms", dispatch.reaper_min_idle_ms, "Idle time after which a delivery is reclaimed")
      ->capture_default_str();
  app.add_option("--max-attempts", dispatch.max_attempts, "Attempts before a job is dead-lettered")->capture_default_str();
  app.add_option("--http-port", http_port, "OpenAI-compatible HTTP API on this port (0 picks one); unset = off");
  app.add_option("--http-host", http_options.host, "Address the HTTP API binds")->capture_default_str();
  app.add_option("--http-max-body-bytes", http_options.max_body_bytes, "Larger HTTP request bodies get 413")
      ->capture_default_str();
  app.add_option("--http-threads", http_options.threads, "HTTP requests served at once (a stream holds one)")
      ->capture_default_str();
  app.add_option("--drain-timeout-seconds", drain_seconds, "Grace period for in-flight calls on SIGTERM")->capture_default_str();
  tls::ServerTlsOptions tls_flags, http_tls_flags;
  tls::ClientTlsOptions executor_tls_flags;
  tls::AddServerTlsFlags(app, &tls_flags);
  tls::AddServerTlsFlags(app, &http_tls_flags, "http-", "the HTTP API");
  app.get_option("--http-tls-cert")
      ->description("PEM certificate (chain) of the HTTP API, for HTTPS with --http-tls-key (default: with no "
                    "--http-tls-* flag the HTTP API follows the --tls-* flags, plain HTTP without them)");
  tls::AddClientTlsFlags(app, &executor_tls_flags, "executor", "the executors");
  telemetry::TelemetryOptions tel;
  tel.service_name = "unmask-scheduler";
  tel.metrics_listen = "0.0.0.0:9091";
  telemetry::AddTelemetryOptions(app, &tel);
  CLI11_PARSE(app, argc, argv);

  auto policy = scheduler::ParseDispatchPolicy(dispatch_policy);
  auto clamp = memory::ParseClampPolicy(clamp_policy);
  if (!policy.ok() || !clamp.ok()) {
    std::cerr << "unmask-scheduler: " << (!policy.ok() ? policy.status() : clamp.status()).message() << "\n";
    return 2;
  }
  dispatch.policy = *policy;
  if (auto s = scheduler::ValidateRequestLimits(options.limits); !s.ok()) {
    std::cerr << "unmask-scheduler: " << s.message() << "\n";
    return 2;
  }
  auto tls = tls::LoadServerTls(tls_flags);
  auto executor_tls = tls::LoadClientTls(executor_tls_flags);
  // The HTTP API follows the gRPC listener unless it has TLS flags of its own.
  auto http_tls = http_tls_flags.given() ? tls::LoadServerTls(http_tls_flags) : tls;
  for (const Status& s : {tls.status(), executor_tls.status(), http_tls.status()}) {
    if (!s.ok()) {
      std::cerr << "unmask-scheduler: " << s.message() << "\n";
      return 2;
    }
  }
  if (!api_keys_file.empty()) {
    auto keys = auth::ApiKeys::Load(api_keys_file);
    if (!keys.ok()) {
      std::cerr << "unmask-scheduler: --api-keys-file " << keys.status().message() << "\n";
      return 2;
    }
    options.api_keys = *keys;
    std::cout << "unmask-scheduler: API keys required (" << (*keys)->size() << " in " << api_keys_file << ")" << std::endl;
  }

  auto started = telemetry::Telemetry::Start(tel);
  if (!started.ok()) {
    std::cerr << "unmask-scheduler: " << started.status().ToString() << "\n";
    return started.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  telemetry::Telemetry& tm = **started;
  if (tm.metrics_port() > 0) std::cout << "unmask-scheduler: metrics on port " << tm.metrics_port() << std::endl;
  for (const auto& field : scheduler::ClampFields()) tm.metrics().AddClamp(field, 0);  // present from the start

  std::unique_ptr<jobs::JobStore> store;
  if (redis.empty()) {
    store = std::make_unique<jobs::MemoryJobStore>();
  } else {
    jobs::RedisJobStoreOptions redis_options;
    const auto colon = redis.rfind(':');
    redis_options.endpoint.host = redis.substr(0, colon);
    if (colon != std::string::npos) {
      try {
        redis_options.endpoint.port = std::stoi(redis.substr(colon + 1));
      } catch (const std::exception&) {
        std::cerr << "unmask-scheduler: --redis " << redis << ": the port is not a number\n";
        return 2;
      }
    }
    if (const char* password = std::getenv("UNMASK_REDIS_PASSWORD")) redis_options.endpoint.password = password;
    auto connected = jobs::RedisJobStore::Connect(redis_options);
    if (!connected.ok()) {
      std::cerr << "unmask-scheduler: --redis " << redis << ": " << connected.status().ToString() << "\n";
      return 1;
    }
    store = std::move(*connected);
  }
  std::cout << "unmask-scheduler: " << store->Describe() << std::endl;

  scheduler::ExecutorPoolOptions pool_options;
  pool_options.addresses = SplitCommas(executors);
  pool_options.dns_names = SplitCommas(executors_dns);
  pool_options.tls = *executor_tls;
  scheduler::ExecutorPool pool(pool_options);
  pool.Start();
  scheduler::ModelCatalog catalog(model_roots);
  scheduler::SchedulerCore core(
      *store, [&pool] { return pool.Snapshot(); }, catalog,
      scheduler::MakeClamper(*clamp, executor_precision == "fp32" ? 4 : 2), options);
  scheduler::JobDispatcher dispatcher(*store, pool, catalog, dispatch, tm.tracer(), &tm.metrics());
  scheduler::SchedulerGrpcService service(core, tm.tracer(), &tm.metrics());
  services::ServerRunner runner("Scheduler");
  runner.AddService(&service);
  runner.SetMaxReceiveMessageBytes(grpc_max_receive_bytes);
  runner.SetTls(*tls);
  if (auto s = runner.Start(listen); !s.ok()) {
    std::cerr << "unmask-scheduler: " << s.ToString() << std::endl;
    return 1;
  }
  // The OpenAI-compatible HTTP API: the same core, another adapter.
  scheduler::http::CompletionService completions(core, catalog, [&pool] { return pool.Snapshot(); });
  std::unique_ptr<scheduler::http::OpenAiHttpServer> http;
  if (http_port >= 0) {
    http_options.port = http_port;
    http_options.tls = *http_tls;
    http = std::make_unique<scheduler::http::OpenAiHttpServer>(completions, http_options);
    auto bound = http->Start();
    if (!bound.ok()) {
      std::cerr << "unmask-scheduler: --http-port " << http_port << ": " << bound.status().message() << std::endl;
      return 1;
    }
    std::cout << "unmask-scheduler: OpenAI-compatible HTTP on port " << *bound << " ("
              << (*http_tls ? "HTTPS, " + tls::Describe(*http_tls) : "plain HTTP") << ")" << std::endl;
  }
  dispatcher.Start();
  runner.SetServing(true);
  std::cout << "unmask-scheduler: listening on port " << runner.port() << " (" << tls::Describe(*tls) << ")"
            << std::endl;
  runner.WaitForSignalAndDrain(std::chrono::seconds(drain_seconds));
  if (http) http->Stop();
  dispatcher.Stop();
  tm.Shutdown();  // sends the spans still queued
  return 0;
}
