#include "services/scheduler/scheduler_server.h"

#include <iostream>
#include <sstream>

#include "common/auth/api_keys.h"
#include "common/jobs/memory_job_store.h"
#include "common/jobs/redis_job_store.h"
#include "common/util/host_port.h"
#include "services/scheduler/clamp_adapter.h"
#include "services/scheduler/dispatch_policy.h"
#include "services/scheduler/request_limits.h"

namespace unmask::scheduler {
namespace {

constexpr char kProgram[] = "unmask-scheduler";

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

Status Usage(const Status& cause, std::string message) {
  return services::ReportStartFailure(kProgram, cause, std::move(message), 2);
}

// The job store's TLS from the --redis-tls-* flags, checked (errors name the flag; exit 2).
StatusOr<jobs::RedisTlsOptions> RedisTls(const tls::ClientTlsOptions& flags, const std::string& redis) {
  jobs::RedisTlsOptions out;
  if (!flags.wanted()) return out;
  if (redis.empty())
    return Usage(InvalidArgumentError("--redis-tls: needs --redis (the in-process queue has no connection)"),
                 "--redis-tls: needs --redis (the in-process queue has no connection)");
  if (flags.refresh_seconds != 0) {
    const std::string m = "--redis-tls-refresh-seconds: must stay 0: each new Redis connection reads the files anew";
    return Usage(InvalidArgumentError(m), m);
  }
  if (auto loaded = tls::LoadClientTls(flags); !loaded.ok()) return Usage(loaded.status(), loaded.status().message());
  out.enabled = true;
  out.ca_file = flags.ca_file;
  out.cert_file = flags.cert_file;
  out.key_file = flags.key_file;
  out.server_name = flags.server_name;
  if (Status s = jobs::CheckRedisTls(out); !s.ok()) {
    const std::string m = "--redis-tls-" + std::string(s.field() == "ca_file" ? "ca" : s.field() == "cert_file" ? "cert" : "key") +
                          " " + s.message();
    return Usage(s, m);
  }
  return out;
}

}  // namespace

struct SchedulerServer::Prepared {
  fitting::ClampPolicy clamp;
  int compute_bytes = 2;
  std::optional<tls::ServerTlsMaterial> tls, http_tls;
  std::optional<tls::ClientTlsMaterial> executor_tls;
  jobs::RedisTlsOptions redis_tls;
};

// The flags' checks, before anything starts: the policies, the limits, the TLS material and the
// API keys (said on stdout when required).
StatusOr<SchedulerServer::Prepared> SchedulerServer::Prepare(SchedulerServerOptions& o) {
  Prepared out;
  auto policy = ParseDispatchPolicy(o.dispatch_policy);
  auto clamp = fitting::ParseClampPolicy(o.clamp_policy);
  if (!policy.ok() || !clamp.ok()) {
    const Status s = !policy.ok() ? policy.status() : clamp.status();
    return Usage(s, s.message());
  }
  o.dispatch.policy = *policy;
  out.clamp = *clamp;
  auto bytes = ExecutorComputeBytes(o.executor_precision);
  if (!bytes.ok()) return Usage(bytes.status(), bytes.status().message());
  out.compute_bytes = *bytes;
  if (auto s = ValidateRequestLimits(o.core.limits); !s.ok()) return Usage(s, s.message());
  auto tls = tls::LoadServerTls(o.tls);
  auto executor_tls = tls::LoadClientTls(o.executor_tls);
  // The HTTP API follows the gRPC listener unless it has TLS flags of its own.
  auto http_tls = o.http_tls.given() ? tls::LoadServerTls(o.http_tls) : tls;
  for (const Status& s : {tls.status(), executor_tls.status(), http_tls.status()}) {
    if (!s.ok()) return Usage(s, s.message());
  }
  out.tls = *tls;
  out.http_tls = *http_tls;
  out.executor_tls = *executor_tls;
  UNMASK_ASSIGN_OR_RETURN(out.redis_tls, RedisTls(o.redis_tls, o.redis));
  if (!o.api_keys_file.empty()) {
    auto keys = auth::ApiKeys::Load(o.api_keys_file);
    if (!keys.ok()) return Usage(keys.status(), "--api-keys-file " + keys.status().message());
    o.core.api_keys = *keys;
    std::cout << "unmask-scheduler: API keys required (" << (*keys)->size() << " in " << o.api_keys_file << ")"
              << std::endl;
  }
  return out;
}

StatusOr<std::unique_ptr<SchedulerServer>> SchedulerServer::Start(const SchedulerServerOptions& options) {
  std::unique_ptr<SchedulerServer> server(new SchedulerServer(options));
  UNMASK_ASSIGN_OR_RETURN(const Prepared prepared, Prepare(server->options_));
  UNMASK_RETURN_IF_ERROR(server->StartTelemetry());
  UNMASK_RETURN_IF_ERROR(server->OpenStore(prepared.redis_tls));
  UNMASK_RETURN_IF_ERROR(server->ServeGrpc(prepared));
  UNMASK_RETURN_IF_ERROR(server->ServeHttp(prepared));
  server->dispatcher_->Start();
  server->runner_.SetServing(true);
  std::cout << "unmask-scheduler: listening on port " << server->runner_.port() << " (" << tls::Describe(prepared.tls)
            << ")" << std::endl;
  server->started_ = true;
  return server;
}

Status SchedulerServer::StartTelemetry() {
  auto started = services::StartTelemetry(kProgram, options_.telemetry, options_.otlp_tls, options_.metrics_tls);
  UNMASK_RETURN_IF_ERROR(started.status());
  telemetry_ = std::move(*started);
  if (telemetry_->metrics_port() > 0)
    std::cout << "unmask-scheduler: metrics on port " << telemetry_->metrics_port() << std::endl;
  for (const auto& field : ClampFields()) telemetry_->metrics().AddClamp(field, 0);  // present from the start
  return OkStatus();
}

Status SchedulerServer::OpenStore(const jobs::RedisTlsOptions& redis_tls) {
  const std::string& redis = options_.redis;
  if (redis.empty()) {
    store_ = std::make_unique<jobs::MemoryJobStore>();
  } else {
    jobs::RedisJobStoreOptions redis_options;
    HostPortRules rules;
    rules.default_port = redis_options.endpoint.port;
    auto address = ParseHostPort(redis, rules);
    if (!address.ok()) return Usage(address.status(), "--redis " + address.status().message());
    redis_options.endpoint.host = address->host;
    redis_options.endpoint.port = address->port;
    redis_options.endpoint.password = options_.redis_password;
    redis_options.endpoint.tls = redis_tls;
    auto connected = jobs::RedisJobStore::Connect(redis_options);
    if (!connected.ok()) {
      return services::ReportStartFailure(kProgram, connected.status(),
                                          "--redis " + redis + ": " + connected.status().ToString(), 1);
    }
    store_ = std::move(*connected);
  }
  std::cout << "unmask-scheduler: " << store_->Describe() << std::endl;
  return OkStatus();
}

// The executor pool, the core, the dispatcher (started last, by Start) and the gRPC listener.
Status SchedulerServer::ServeGrpc(const Prepared& prepared) {
  telemetry::Telemetry& tm = *telemetry_;
  ExecutorPoolOptions pool_options;
  pool_options.addresses = SplitCommas(options_.executors);
  pool_options.dns_names = SplitCommas(options_.executors_dns);
  pool_options.tls = prepared.executor_tls;
  pool_ = std::make_unique<ExecutorPool>(pool_options);
  pool_->Start();
  catalog_ = std::make_unique<ModelCatalog>(options_.model_roots);
  ExecutorPool& pool = *pool_;
  core_ = std::make_unique<SchedulerCore>(
      *store_, [&pool] { return pool.Snapshot(); }, *catalog_, MakeClamper(prepared.clamp, prepared.compute_bytes),
      options_.core);
  dispatcher_ = std::make_unique<JobDispatcher>(*store_, pool, *catalog_, options_.dispatch, tm.tracer(), &tm.metrics());
  service_ = std::make_unique<SchedulerGrpcService>(*core_, tm.tracer(), &tm.metrics());
  runner_.AddService(service_.get());
  runner_.SetMaxReceiveMessageBytes(options_.grpc_max_receive_bytes);
  runner_.SetTls(prepared.tls);
  if (auto s = runner_.Start(options_.listen); !s.ok()) return services::ReportStartFailure(kProgram, s, s.ToString(), 1);
  return OkStatus();
}

// The OpenAI-compatible HTTP API: the same core, another adapter.
Status SchedulerServer::ServeHttp(const Prepared& prepared) {
  ExecutorPool& pool = *pool_;
  completions_ = std::make_unique<http::CompletionService>(*core_, *catalog_, [&pool] { return pool.Snapshot(); });
  if (options_.http_port < 0) return OkStatus();
  http::HttpServerOptions http_options = options_.http;
  http_options.port = options_.http_port;
  http_options.tls = prepared.http_tls;
  http_ = std::make_unique<http::OpenAiHttpServer>(*completions_, http_options);
  auto bound = http_->Start();
  if (!bound.ok()) {
    return services::ReportStartFailure(
        kProgram, bound.status(), "--http-port " + std::to_string(options_.http_port) + ": " + bound.status().message(), 1);
  }
  http_port_ = *bound;
  std::cout << "unmask-scheduler: OpenAI-compatible HTTP on port " << *bound << " ("
            << (prepared.http_tls ? "HTTPS, " + tls::Describe(prepared.http_tls) : "plain HTTP") << ")" << std::endl;
  return OkStatus();
}

void SchedulerServer::Shutdown() {
  shutdown_.Run([this] {
    runner_.Stop(std::chrono::seconds(options_.drain_timeout_seconds));
    if (http_) http_->Stop();
    dispatcher_->Stop();
    telemetry_->Shutdown();  // sends the spans still queued
  });
}

SchedulerServer::~SchedulerServer() {
  if (started_) Shutdown();  // (a failed Start leaves things as a failed unmask-scheduler did)
}

}  // namespace unmask::scheduler
