#include "services/executor/executor_server.h"

#include <algorithm>
#include <iostream>

#include "common/model/compute_setup.h"
#include "common/model/llada_model.h"
#include "common/model/small_gemm.h"
#include "common/model/threading.h"
#include "common/model/torch_util.h"
#include "common/registry/device_budget.h"
#include "common/telemetry/log.h"

namespace unmask::executor {
namespace {

constexpr char kProgram[] = "unmask-executor";
using ModelPtr = std::shared_ptr<const model::LladaModel>;

// `stored`: the weights' storage type as the loader reports it ("bf16", "int4:g64", ...).
StatusOr<model::ModelOptions> ModelOptionsFrom(const ExecutorServerOptions& f, const std::string& stored) {
  model::ModelOptions mopts;
  model::Precision stored_precision = model::StoredPrecision(stored);
  if (stored == "checkpoint" && !f.model_dir.empty()) {
    UNMASK_ASSIGN_OR_RETURN(stored_precision, model::CheckpointPrecision(f.model_dir));
  }
  auto requested = model::ParsePrecisionFlag(f.precision);
  if (!requested.ok()) return InvalidArgumentError("--precision: " + requested.status().message());
  UNMASK_ASSIGN_OR_RETURN(const c10::Device device, model::ParseDevice(f.core.device));
  const model::ComputeChoice choice =
      model::ChooseCompute(*requested, model::HostCpuFeatures(), device.is_cuda(), stored_precision);
  mopts.precision = choice.compute;
  mopts.precision_why = choice.why;
  mopts.device = f.core.device;
  mopts.attention_query_chunk = f.attention_chunk;
  mopts.cuda_graphs = f.cuda_graphs;
  mopts.fused_kernels = f.fused_kernels && device.is_cuda();
  return mopts;
}

// On a GPU, says whether the model computes from the loader's GPU copy or copies the weights.
void LogDeviceSharing(const ExecutorServerOptions& f, const LoaderLease& lease) {
  if (f.core.device.rfind("cuda", 0) != 0) return;
  const std::string& how = lease.device_sharing();
  telemetry::Log(how == "cuda-ipc" ? telemetry::LogLevel::kInfo : telemetry::LogLevel::kWarn, {}, {},
                 how == "cuda-ipc" ? "computing from the loader's GPU copy of the weights"
                                   : "copying the weights to the GPU",
                 {{"model_id", f.model}, {"device", f.core.device}, {"sharing", how}});
}

AttachOptions AttachOptionsFrom(const ExecutorServerOptions& f, const std::optional<tls::ClientTlsMaterial>& loader_tls) {
  AttachOptions o;
  o.loader_address = f.loader;
  o.loader_tls = loader_tls;
  o.model_id = f.model;
  o.precision = f.load_precision;
  o.executor_id = f.core.executor_id;
  o.timeout = std::chrono::seconds(f.attach_timeout_seconds);
  o.device = f.core.device;
  return o;
}

// Says, in the log and the metrics, what the model is stored and computed in, and why.
void AnnounceCompute(const ExecutorServerOptions& f, const model::LladaModel& model, const std::string& stored,
                     telemetry::ServiceMetrics* metrics) {
  const auto& o = model.options();
  const std::string compute = model::PrecisionName(o.precision);
  const std::string gemm = model::GemmPathName(model::ActiveGemmPath());
  telemetry::Log(telemetry::LogLevel::kInfo, {}, {}, "computing",
                 {{"model_id", f.model}, {"storage", stored}, {"compute", compute}, {"why", o.precision_why},
                  {"gemm", gemm}});
  if (metrics != nullptr) metrics->SetComputeInfo(f.model, stored, compute, gemm, o.precision_why);
}

StatusOr<ModelPtr> ModelOver(const ExecutorServerOptions& f, std::shared_ptr<const weights::AttachedModel> segment) {
  UNMASK_ASSIGN_OR_RETURN(const model::ModelOptions mopts, ModelOptionsFrom(f, segment->manifest().precision));
  UNMASK_ASSIGN_OR_RETURN(auto m, model::LladaModel::FromSegment(std::move(segment), mopts));
  return ModelPtr(std::move(m));
}

StatusOr<ModelPtr> BuildModel(const ExecutorServerOptions& f, const std::optional<tls::ClientTlsMaterial>& loader_tls,
                              std::unique_ptr<LoaderLease>& lease, const telemetry::Tracer& tracer) {
  if (!f.model_dir.empty()) {
    UNMASK_ASSIGN_OR_RETURN(const model::ModelOptions mopts, ModelOptionsFrom(f, "checkpoint"));
    UNMASK_ASSIGN_OR_RETURN(auto m, model::LladaModel::Load(f.model_dir, mopts));
    return ModelPtr(std::move(m));
  }
  UNMASK_ASSIGN_OR_RETURN(lease, LoaderLease::Acquire(AttachOptionsFrom(f, loader_tls), tracer));
  LogDeviceSharing(f, *lease);
  return ModelOver(f, lease->model());
}

// Before anything is asked of the loader: a bad flag must not load a model there. Returns the
// compute set-up (logged once telemetry is on) and the TLS material to serve with.
struct Checked {
  model::ComputeSetup setup;
  std::optional<tls::ServerTlsMaterial> tls;
};

StatusOr<Checked> CheckOptions(const ExecutorServerOptions& f, std::optional<tls::ClientTlsMaterial>* loader_tls) {
  model::ComputeSetupOptions setup_options;
  setup_options.threads = f.intra_op_threads;
  setup_options.callers = std::max(1, f.core.workers);
  setup_options.gemm = f.gemm;
  setup_options.threads_flag = "--intra-op-threads";
  auto setup = model::SetUpCompute(setup_options);
  if (!setup.ok()) return services::ReportStartFailure(kProgram, setup.status(), setup.status().message(), 2);
  auto tls = tls::LoadServerTls(f.tls);
  auto client_tls = tls::LoadClientTls(f.loader_tls);
  if (!tls.ok() || !client_tls.ok()) {
    const Status s = !tls.ok() ? tls.status() : client_tls.status();
    return services::ReportStartFailure(kProgram, s, s.message(), 2);
  }
  *loader_tls = *client_tls;
  if (auto checked = ModelOptionsFrom(f, "checkpoint"); !checked.ok()) {
    const Status& s = checked.status();
    return services::ReportStartFailure(kProgram, s, s.message(), s.code() == StatusCode::kInvalidArgument ? 2 : 1);
  }
  return Checked{*setup, *tls};
}

}  // namespace

StatusOr<std::unique_ptr<ExecutorServer>> ExecutorServer::Start(const ExecutorServerOptions& options) {
  std::unique_ptr<ExecutorServer> server(new ExecutorServer(options));
  server->options_.core.model_id = options.model;
  UNMASK_ASSIGN_OR_RETURN(const Checked checked, CheckOptions(server->options_, &server->loader_tls_));
  UNMASK_RETURN_IF_ERROR(server->StartTelemetry());
  const model::ComputeSetup& setup = checked.setup;
  telemetry::Log(telemetry::LogLevel::kInfo, {}, {}, "compute set-up",
                 {{"cpu", setup.cpu}, {"cpu_flags", setup.cpu_flags}, {"threads", setup.threads},
                  {"gemm", setup.gemm_line}, {"allocator", setup.allocator}});
  telemetry::Telemetry& tm = *server->telemetry_;
  if (tm.metrics_port() > 0) std::cout << "unmask-executor: metrics on port " << tm.metrics_port() << std::endl;
  UNMASK_RETURN_IF_ERROR(server->BuildCore());
  UNMASK_RETURN_IF_ERROR(server->Serve(checked.tls));
  server->FollowLoader();
  server->started_ = true;
  return server;
}

Status ExecutorServer::StartTelemetry() {
  auto started = services::StartTelemetry(kProgram, options_.telemetry, options_.otlp_tls, options_.metrics_tls);
  UNMASK_RETURN_IF_ERROR(started.status());
  telemetry_ = std::move(*started);
  return OkStatus();
}

// The model (from the loader or the checkpoint), the core over it, warmed up.
Status ExecutorServer::BuildCore() {
  telemetry::Telemetry& tm = *telemetry_;
  auto model = BuildModel(options_, loader_tls_, lease_, tm.tracer());
  if (!model.ok()) {
    telemetry::Log(telemetry::LogLevel::kError, {}, {}, "cannot get the model",
                   {{"model_id", options_.model}, {"error", model.status().ToString()}});
    const int exit_code = model.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
    return services::StartFailure(model.status(), "cannot get the model: " + model.status().ToString(), exit_code);
  }
  options_.core.weights_precision = lease_ ? lease_->precision() : "checkpoint";
  AnnounceCompute(options_, **model, options_.core.weights_precision, &tm.metrics());
  UNMASK_RETURN_IF_ERROR(PlanWorkersFor(**model));
  core_ = std::make_unique<ExecutorCore>(*std::move(model), options_.core, tm.tracer(), &tm.metrics());
  const CapacityReport capacity = core_->Capacity();  // also sets the memory gauges
  LogJobBudget(options_.core, capacity.job_budget_bytes);
  if (auto s = core_->Warmup(); !s.ok()) {
    telemetry::Log(telemetry::LogLevel::kError, {}, {}, "warm-up failed", {{"error", s.ToString()}});
    return services::StartFailure(s, "warm-up failed: " + s.ToString(), 1);
  }
  return OkStatus();
}

// The admission budget of the running jobs and where it came from: an operator whose jobs are
// refused as DOES_NOT_FIT reads here why (MemAvailable, the container's cgroup limit, or the flag).
void ExecutorServer::LogJobBudget(const ExecutorOptions& core, std::uint64_t job_budget_bytes) {
  std::string from = "--job-budget-bytes";
  if (core.job_budget_bytes == 0) {
    auto jobs = weights::DeviceBudget::ForJobs();
    from = jobs.ok() ? jobs->source() + " less --memory-reserve-bytes" : jobs.status().ToString();
  }
  telemetry::Log(job_budget_bytes > 0 ? telemetry::LogLevel::kInfo : telemetry::LogLevel::kWarn, {}, {}, "job budget",
                 {{"bytes", std::to_string(job_budget_bytes)},
                  {"reserve_bytes", std::to_string(core.memory_reserve_bytes)},
                  {"from", from}});
}

// `--workers 0`: as many workers as model::PlanWorkers says for this model and device, each
// forward then on the cores shared among them (unless --intra-op-threads says otherwise).
Status ExecutorServer::PlanWorkersFor(const model::LladaModel& model) {
  if (options_.core.workers > 0) return OkStatus();
  const bool on_cpu = options_.core.device.rfind("cpu", 0) == 0;
  options_.core.workers = model::PlanWorkers(on_cpu, model.config().d_model, model::UsableCores());
  std::string threads = "unchanged";
  if (options_.core.workers > 1 && options_.intra_op_threads == 0) {
    auto report = model::ConfigureThreading(0, options_.core.workers);
    if (!report.ok()) return services::StartFailure(report.status(), report.status().ToString(), 1);
    threads = report->Describe();
  }
  telemetry::Log(telemetry::LogLevel::kInfo, {}, {}, "workers planned",
                 {{"workers", std::to_string(options_.core.workers)},
                  {"d_model", std::to_string(model.config().d_model)},
                  {"device", options_.core.device},
                  {"why", options_.core.workers > 1 ? "a narrow model on a CPU: one worker per core"
                                                    : "one worker on all the cores"},
                  {"threads", threads}});
  return OkStatus();
}

Status ExecutorServer::Serve(const std::optional<tls::ServerTlsMaterial>& tls) {
  telemetry::Telemetry& tm = *telemetry_;
  service_ = std::make_unique<ExecutorGrpcService>(*core_, options_.model, tm.tracer(), &tm.metrics());
  runner_.AddService(service_.get());
  runner_.SetTls(tls);
  if (auto s = runner_.Start(options_.listen); !s.ok()) {
    telemetry::Log(telemetry::LogLevel::kError, {}, {}, "cannot serve",
                   {{"listen", options_.listen}, {"error", s.ToString()}});
    return services::StartFailure(s, "cannot serve: " + s.ToString(), 1);
  }
  runner_.SetServing(true);
  std::cout << "unmask-executor: serving " << options_.model << " on port " << runner_.port() << " ("
            << tls::Describe(tls) << ")" << std::endl;
  return OkStatus();
}

// Follows the loader: re-attaches after a loader restart, lets go of a model a forced unload
// revoked and serves it again once it is loaded again (services/executor/lease_keeper.h).
void ExecutorServer::FollowLoader() {
  if (!lease_) return;
  telemetry::Telemetry& tm = *telemetry_;
  LeaseKeeperHooks hooks;
  hooks.build = [this](std::shared_ptr<const weights::AttachedModel> segment) {
    auto built = ModelOver(options_, segment);
    if (built.ok()) AnnounceCompute(options_, **built, segment->manifest().precision, &telemetry_->metrics());
    return built;
  };
  hooks.set_serving = [this](bool serving) { runner_.SetServing(serving); };
  hooks.attached = [this](const LoaderLease& l) { LogDeviceSharing(options_, l); };
  keeper_ = std::make_unique<LeaseKeeper>(AttachOptionsFrom(options_, loader_tls_), std::move(lease_), *core_,
                                          std::move(hooks), tm.tracer());
}

void ExecutorServer::Shutdown() {
  shutdown_.Run([this] {
    runner_.Stop(std::chrono::seconds(options_.drain_timeout_seconds));
    keeper_.reset();
    telemetry_->Shutdown();  // sends the spans still queued
  });
}

ExecutorServer::~ExecutorServer() {
  if (started_) Shutdown();  // (a failed Start leaves things as a failed unmask-executor did)
}

}  // namespace unmask::executor
