// unmask-executor: runs diffusion jobs on weights the loader holds (or, with --model-dir, on a
// checkpoint it reads itself) and streams every step.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "common/model/compute_setup.h"
#include "common/model/llada_model.h"
#include "common/model/small_gemm.h"
#include "common/model/torch_util.h"
#include "common/telemetry/log.h"
#include "common/telemetry/options.h"
#include "services/common/server_runner.h"
#include "services/common/tls_flags.h"
#include "services/executor/executor_core.h"
#include "services/executor/executor_grpc.h"
#include "services/executor/lease_keeper.h"
#include "services/executor/loader_client.h"

namespace {

using unmask::StatusOr;

struct Flags {
  std::string listen = "0.0.0.0:50053", loader = "127.0.0.1:50052", model, model_dir, load_precision;
  std::string precision = "auto", gemm = "auto";
  int attach_timeout_seconds = 300, drain_seconds = 30;
  std::int64_t attention_chunk = 0;
  int intra_op_threads = 0;
  unmask::executor::ExecutorOptions options;
  unmask::telemetry::TelemetryOptions telemetry;
  unmask::tls::ServerTlsOptions tls;
  unmask::tls::ClientTlsOptions loader_tls_flags;
  std::optional<unmask::tls::ClientTlsMaterial> loader_tls;  // loaded from loader_tls_flags
};

// `stored`: the weights' storage type as the loader reports it ("bf16", "int4:g64", ...).
StatusOr<unmask::model::ModelOptions> ModelOptionsFrom(const Flags& f, const std::string& stored) {
  namespace model = unmask::model;
  model::ModelOptions mopts;
  model::Precision stored_precision = model::StoredPrecision(stored);
  if (stored == "checkpoint" && !f.model_dir.empty()) {
    UNMASK_ASSIGN_OR_RETURN(stored_precision, model::CheckpointPrecision(f.model_dir));
  }
  auto requested = model::ParsePrecisionFlag(f.precision);
  if (!requested.ok()) return unmask::InvalidArgumentError("--precision: " + requested.status().message());
  UNMASK_ASSIGN_OR_RETURN(const c10::Device device, model::ParseDevice(f.options.device));
  const model::ComputeChoice choice =
      model::ChooseCompute(*requested, model::HostCpuFeatures(), device.is_cuda(), stored_precision);
  mopts.precision = choice.compute;
  mopts.precision_why = choice.why;
  mopts.device = f.options.device;
  mopts.attention_query_chunk = f.attention_chunk;
  return mopts;
}

// On a GPU, says whether the model computes from the loader's GPU copy or copies the weights.
void LogDeviceSharing(const Flags& f, const unmask::executor::LoaderLease& lease) {
  if (f.options.device.rfind("cuda", 0) != 0) return;
  const std::string& how = lease.device_sharing();
  namespace telemetry = unmask::telemetry;
  telemetry::Log(how == "cuda-ipc" ? telemetry::LogLevel::kInfo : telemetry::LogLevel::kWarn, {}, {},
                 how == "cuda-ipc" ? "computing from the loader's GPU copy of the weights"
                                   : "copying the weights to the GPU",
                 {{"model_id", f.model}, {"device", f.options.device}, {"sharing", how}});
}

unmask::executor::AttachOptions AttachOptionsFrom(const Flags& f) {
  unmask::executor::AttachOptions o;
  o.loader_address = f.loader;
  o.loader_tls = f.loader_tls;
  o.model_id = f.model;
  o.precision = f.load_precision;
  o.executor_id = f.options.executor_id;
  o.timeout = std::chrono::seconds(f.attach_timeout_seconds);
  o.device = f.options.device;
  return o;
}

// Says, in the log and the metrics, what the model is stored and computed in, and why.
void AnnounceCompute(const Flags& f, const unmask::model::LladaModel& model, const std::string& stored,
                     unmask::telemetry::ServiceMetrics* metrics) {
  namespace model_ns = unmask::model;
  const auto& o = model.options();
  const std::string compute = model_ns::PrecisionName(o.precision);
  const std::string gemm = model_ns::GemmPathName(model_ns::ActiveGemmPath());
  unmask::telemetry::Log(unmask::telemetry::LogLevel::kInfo, {}, {}, "computing",
                         {{"model_id", f.model}, {"storage", stored}, {"compute", compute}, {"why", o.precision_why},
                          {"gemm", gemm}});
  if (metrics != nullptr) metrics->SetComputeInfo(f.model, stored, compute, gemm, o.precision_why);
}

StatusOr<std::shared_ptr<const unmask::model::LladaModel>> ModelOver(
    const Flags& f, std::shared_ptr<const unmask::weights::AttachedModel> segment) {
  UNMASK_ASSIGN_OR_RETURN(const unmask::model::ModelOptions mopts,
                          ModelOptionsFrom(f, segment->manifest().precision));
  UNMASK_ASSIGN_OR_RETURN(auto m, unmask::model::LladaModel::FromSegment(std::move(segment), mopts));
  return std::shared_ptr<const unmask::model::LladaModel>(std::move(m));
}

StatusOr<std::shared_ptr<const unmask::model::LladaModel>> BuildModel(
    const Flags& f, std::unique_ptr<unmask::executor::LoaderLease>& lease, const unmask::telemetry::Tracer& tracer) {
  if (!f.model_dir.empty()) {
    UNMASK_ASSIGN_OR_RETURN(const unmask::model::ModelOptions mopts, ModelOptionsFrom(f, "checkpoint"));
    UNMASK_ASSIGN_OR_RETURN(auto m, unmask::model::LladaModel::Load(f.model_dir, mopts));
    return std::shared_ptr<const unmask::model::LladaModel>(std::move(m));
  }
  UNMASK_ASSIGN_OR_RETURN(lease, unmask::executor::LoaderLease::Acquire(AttachOptionsFrom(f), tracer));
  LogDeviceSharing(f, *lease);
  return ModelOver(f, lease->model());
}

}  // namespace

int main(int argc, char** argv) {
  unmask::services::BlockShutdownSignals();
  Flags f;
  f.options.executor_id = "executor-" + std::to_string(::getpid());
  CLI::App app{"unmask-executor: diffusion steps over shared weights, streamed step by step"};
  app.add_option("--listen", f.listen, "gRPC listen address (port 0 picks one)")->capture_default_str();
  app.add_option("--loader", f.loader, "Loader address")->capture_default_str();
  app.add_option("--model", f.model, "Model id (a directory name under the loader's model roots)")->required();
  app.add_option("--model-dir", f.model_dir, "Read this checkpoint directly instead of attaching through a loader");
  app.add_option("--load-precision", f.load_precision, "Weights precision to ask the loader for (default: the loader's)");
  app.add_option("--precision", f.precision,
                 "Compute type: auto (from the device and the CPU's features: on a CPU bf16 for bf16 weights where it "
                 "has bf16 instructions, fp32 over weights kept as the loader stores them elsewhere; bf16 on a GPU), "
                 "fp32, bf16, fp16")
      ->capture_default_str();
  app.add_option("--gemm", f.gemm, "Few-row float32 kernel: auto (the widest this CPU runs), avx512, avx2, blas")
      ->capture_default_str();
  app.add_option("--device", f.options.device, "cpu or cuda[:N]")->capture_default_str();
  app.add_option("--attention-chunk", f.attention_chunk,
                 "Query rows per attention chunk for every job (0 = all at once; a job's own chunk, set by the "
                 "scheduler's memory clamp, applies when smaller)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--executor-id", f.options.executor_id, "Name reported to the loader and the scheduler");
  app.add_option("--workers", f.options.workers, "Jobs run at once, each on its own thread")->capture_default_str();
  app.add_option("--intra-op-threads", f.intra_op_threads,
                 "Threads one forward pass uses (0: one per core; LibTorch's own default took one on 2-core machines)")
      ->capture_default_str();
  app.add_option("--max-batch,--max-concurrent-jobs", f.options.max_batch, "Jobs batched into one forward pass (the jobs one worker runs at once)")
      ->capture_default_str();
  app.add_option("--max-queued-jobs", f.options.max_queued_jobs, "Queue limit")->capture_default_str();
  app.add_option("--memory-reserve-bytes", f.options.memory_reserve_bytes, "Kept free of the budget")->capture_default_str();
  app.add_option("--attach-timeout-seconds", f.attach_timeout_seconds, "How long to retry the loader")->capture_default_str();
  app.add_option("--drain-timeout-seconds", f.drain_seconds, "Grace period for in-flight jobs on SIGTERM")->capture_default_str();
  unmask::tls::AddServerTlsFlags(app, &f.tls);
  unmask::tls::AddClientTlsFlags(app, &f.loader_tls_flags, "loader", "the loader");
  namespace telemetry = unmask::telemetry;
  f.telemetry.service_name = "unmask-executor";
  f.telemetry.metrics_listen = "0.0.0.0:9093";
  telemetry::AddTelemetryOptions(app, &f.telemetry);
  CLI11_PARSE(app, argc, argv);
  f.options.model_id = f.model;
  // Before anything is asked of the loader: a bad flag must not load a model there.
  unmask::model::ComputeSetupOptions setup_options;
  setup_options.threads = f.intra_op_threads;
  setup_options.callers = std::max(1, f.options.workers);
  setup_options.gemm = f.gemm;
  setup_options.threads_flag = "--intra-op-threads";
  auto setup = unmask::model::SetUpCompute(setup_options);
  if (!setup.ok()) {
    std::cerr << "unmask-executor: " << setup.status().message() << std::endl;
    return 2;
  }
  auto tls = unmask::tls::LoadServerTls(f.tls);
  auto loader_tls = unmask::tls::LoadClientTls(f.loader_tls_flags);
  if (!tls.ok() || !loader_tls.ok()) {
    std::cerr << "unmask-executor: " << (!tls.ok() ? tls.status() : loader_tls.status()).message() << std::endl;
    return 2;
  }
  f.loader_tls = *loader_tls;
  if (auto checked = ModelOptionsFrom(f, "checkpoint"); !checked.ok()) {
    std::cerr << "unmask-executor: " << checked.status().message() << std::endl;
    return checked.status().code() == unmask::StatusCode::kInvalidArgument ? 2 : 1;
  }
  auto started = telemetry::Telemetry::Start(f.telemetry);
  if (!started.ok()) {
    std::cerr << "unmask-executor: " << started.status().ToString() << std::endl;
    return started.status().code() == unmask::StatusCode::kInvalidArgument ? 2 : 1;
  }
  telemetry::Telemetry& tm = **started;
  telemetry::Log(telemetry::LogLevel::kInfo, {}, {}, "compute set-up",
                 {{"cpu", setup->cpu}, {"cpu_flags", setup->cpu_flags}, {"threads", setup->threads},
                  {"gemm", setup->gemm_line}});
  if (tm.metrics_port() > 0) std::cout << "unmask-executor: metrics on port " << tm.metrics_port() << std::endl;

  std::unique_ptr<unmask::executor::LoaderLease> lease;
  auto model = BuildModel(f, lease, tm.tracer());
  if (!model.ok()) {
    telemetry::Log(telemetry::LogLevel::kError, {}, {}, "cannot get the model",
                   {{"model_id", f.model}, {"error", model.status().ToString()}});
    return model.status().code() == unmask::StatusCode::kInvalidArgument ? 2 : 1;
  }
  f.options.weights_precision = lease ? lease->precision() : "checkpoint";
  AnnounceCompute(f, **model, f.options.weights_precision, &tm.metrics());
  unmask::executor::ExecutorCore core(*std::move(model), f.options, tm.tracer(), &tm.metrics());
  (void)core.Capacity();  // sets the memory gauges
  if (auto s = core.Warmup(); !s.ok()) {
    telemetry::Log(telemetry::LogLevel::kError, {}, {}, "warm-up failed", {{"error", s.ToString()}});
    return 1;
  }
  unmask::executor::ExecutorGrpcService service(core, f.model, tm.tracer(), &tm.metrics());
  unmask::services::ServerRunner runner("Executor");
  runner.AddService(&service);
  runner.SetTls(*tls);
  if (auto s = runner.Start(f.listen); !s.ok()) {
    telemetry::Log(telemetry::LogLevel::kError, {}, {}, "cannot serve", {{"listen", f.listen}, {"error", s.ToString()}});
    return 1;
  }
  runner.SetServing(true);
  std::cout << "unmask-executor: serving " << f.model << " on port " << runner.port() << " ("
            << unmask::tls::Describe(*tls) << ")" << std::endl;

  // Follows the loader: re-attaches after a loader restart, lets go of a model a forced unload
  // revoked and serves it again once it is loaded again (services/executor/lease_keeper.h).
  std::unique_ptr<unmask::executor::LeaseKeeper> keeper;
  if (lease) {
    unmask::executor::LeaseKeeperHooks hooks;
    hooks.build = [&f, &tm](std::shared_ptr<const unmask::weights::AttachedModel> segment) {
      auto built = ModelOver(f, segment);
      if (built.ok()) AnnounceCompute(f, **built, segment->manifest().precision, &tm.metrics());
      return built;
    };
    hooks.set_serving = [&runner](bool serving) { runner.SetServing(serving); };
    hooks.attached = [&f](const unmask::executor::LoaderLease& l) { LogDeviceSharing(f, l); };
    keeper = std::make_unique<unmask::executor::LeaseKeeper>(AttachOptionsFrom(f), std::move(lease), core,
                                                              std::move(hooks), tm.tracer());
  }
  runner.WaitForSignalAndDrain(std::chrono::seconds(f.drain_seconds));
  keeper.reset();
  tm.Shutdown();  // sends the spans still queued
  return 0;
}
