// unmask-executor: runs diffusion jobs on weights the loader holds (or, with --model-dir, on a
// checkpoint it reads itself) and streams every step.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <iostream>
#include <thread>

#include "common/model/llada_model.h"
#include "services/common/server_runner.h"
#include "services/executor/executor_core.h"
#include "services/executor/executor_grpc.h"
#include "services/executor/loader_client.h"

namespace {

using unmask::StatusOr;

struct Flags {
  std::string listen = "0.0.0.0:50053", loader = "127.0.0.1:50052", model, model_dir, load_precision;
  std::string precision = "bf16";
  int attach_timeout_seconds = 300, drain_seconds = 30;
  unmask::executor::ExecutorOptions options;
};

StatusOr<std::shared_ptr<const unmask::model::LladaModel>> BuildModel(
    const Flags& f, std::unique_ptr<unmask::executor::LoaderLease>& lease) {
  unmask::model::ModelOptions mopts;
  UNMASK_ASSIGN_OR_RETURN(mopts.precision, unmask::model::ParsePrecision(f.precision));
  mopts.device = f.options.device;
  if (!f.model_dir.empty()) {
    UNMASK_ASSIGN_OR_RETURN(auto m, unmask::model::LladaModel::Load(f.model_dir, mopts));
    return std::shared_ptr<const unmask::model::LladaModel>(std::move(m));
  }
  UNMASK_ASSIGN_OR_RETURN(lease, unmask::executor::LoaderLease::Acquire(f.loader, f.model, f.load_precision,
                                                                        f.options.executor_id,
                                                                        std::chrono::seconds(f.attach_timeout_seconds)));
  UNMASK_ASSIGN_OR_RETURN(auto m, unmask::model::LladaModel::FromSegment(lease->model(), mopts));
  return std::shared_ptr<const unmask::model::LladaModel>(std::move(m));
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
  app.add_option("--precision", f.precision, "Compute precision: fp32, bf16, fp16")->capture_default_str();
  app.add_option("--device", f.options.device, "cpu or cuda[:N]")->capture_default_str();
  app.add_option("--executor-id", f.options.executor_id, "Name reported to the loader and the scheduler");
  app.add_option("--workers", f.options.workers, "Compute threads")->capture_default_str();
  app.add_option("--max-batch", f.options.max_batch, "Jobs batched into one forward pass")->capture_default_str();
  app.add_option("--max-queued-jobs", f.options.max_queued_jobs, "Queue limit")->capture_default_str();
  app.add_option("--memory-reserve-bytes", f.options.memory_reserve_bytes, "Kept free of the budget")->capture_default_str();
  app.add_option("--attach-timeout-seconds", f.attach_timeout_seconds, "How long to retry the loader")->capture_default_str();
  app.add_option("--drain-timeout-seconds", f.drain_seconds, "Grace period for in-flight jobs on SIGTERM")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  f.options.model_id = f.model;

  std::unique_ptr<unmask::executor::LoaderLease> lease;
  auto model = BuildModel(f, lease);
  if (!model.ok()) {
    std::cerr << "unmask-executor: " << model.status().ToString() << std::endl;
    return model.status().code() == unmask::StatusCode::kInvalidArgument ? 2 : 1;
  }
  f.options.weights_precision = lease ? lease->precision() : "checkpoint";
  unmask::executor::ExecutorCore core(*model, f.options);
  if (auto s = core.Warmup(); !s.ok()) {
    std::cerr << "unmask-executor: warm-up failed: " << s.ToString() << std::endl;
    return 1;
  }
  unmask::executor::ExecutorGrpcService service(core, f.model);
  unmask::services::ServerRunner runner("Executor");
  runner.AddService(&service);
  if (auto s = runner.Start(f.listen); !s.ok()) {
    std::cerr << "unmask-executor: " << s.ToString() << std::endl;
    return 1;
  }
  runner.SetServing(true);
  std::cout << "unmask-executor: serving " << f.model << " on port " << runner.port() << std::endl;

  // When the lease ends (forced unload, loader restart) attach again; running jobs finish on the
  // old mapping, which stays valid until they drop it.
  std::atomic<bool> stop{false};
  std::thread reattach([&] {
    while (!stop && lease) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (!lease->lost()) continue;
      std::cerr << "unmask-executor: attachment " << (lease->revoked() ? "revoked" : "lost") << "; re-attaching\n";
      std::unique_ptr<unmask::executor::LoaderLease> next;
      auto m = BuildModel(f, next);
      if (!m.ok()) {
        std::cerr << "unmask-executor: re-attach failed: " << m.status().ToString() << std::endl;
        continue;
      }
      core.ReplaceModel(*m);
      lease = std::move(next);
      std::cerr << "unmask-executor: re-attached" << std::endl;
    }
  });
  runner.WaitForSignalAndDrain(std::chrono::seconds(f.drain_seconds));
  stop = true;
  reattach.join();
  return 0;
}
