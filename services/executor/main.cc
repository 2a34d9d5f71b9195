// unmask-executor: runs diffusion jobs on weights the loader holds (or, with --model-dir, on a
// checkpoint it reads itself) and streams every step. The executor itself is
// services/executor/executor_server.h; this file parses the flags and waits for a signal.
#include <CLI/CLI.hpp>

#include "common/telemetry/options.h"
#include "services/common/server_runner.h"
#include "services/common/tls_flags.h"
#include "services/executor/executor_server.h"

int main(int argc, char** argv) {
  unmask::services::BlockShutdownSignals();
  unmask::executor::ExecutorServerOptions f;
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
  app.add_option("--device", f.core.device, "cpu or cuda[:N]")->capture_default_str();
  app.add_option("--attention-chunk", f.attention_chunk,
                 "Query rows per attention chunk for every job (0 = all at once; a job's own chunk, set by the "
                 "scheduler's memory clamp, applies when smaller)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--cuda-graphs", f.cuda_graphs,
               "On cuda: a job whose step runs alone captures its repeating forwards as CUDA graphs and replays "
               "them (packed steps of several jobs run eagerly)");
  CLI::Option* fused = app.add_flag("--fused-kernels", f.fused_kernels,
                                     "On cuda (the default there): each layer's RMSNorm, rotary embedding and SiLU "
                                     "product, and an int8/int4 layer's dequantization, as one kernel each (the same "
                                     "bits as ATen's operators; a build without the CUDA kernels runs those)");
  app.add_flag("!--no-fused-kernels", f.fused_kernels, "On cuda: ATen's operators instead of the fused kernels")
      ->excludes(fused);
  app.add_option("--executor-id", f.core.executor_id, "Name reported to the loader and the scheduler");
  app.add_option("--workers", f.core.workers,
                 "Threads that each run a batch of jobs (continuous batching: one packed forward per step); 0: one "
                 "per core for a model of d_model <= 512 on a CPU (each forward on one thread), else one")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--intra-op-threads", f.intra_op_threads,
                 "Threads one forward pass uses (0: the cores shared among the workers; LibTorch's own default took one on "
                 "2-core machines)")
      ->capture_default_str();
  app.add_option("--max-batch,--max-concurrent-jobs", f.core.max_batch, "Running jobs one worker packs into each step's forward pass")
      ->capture_default_str();
  app.add_option("--max-queued-jobs", f.core.max_queued_jobs, "Queue limit")->capture_default_str();
  app.add_option("--memory-reserve-bytes", f.core.memory_reserve_bytes, "Kept free of the budget")->capture_default_str();
  app.add_option("--job-budget-bytes", f.core.job_budget_bytes,
                 "What the running jobs' predicted peaks may add up to (0: the memory available at start less the reserve)")
      ->capture_default_str();
  app.add_option("--attach-timeout-seconds", f.attach_timeout_seconds, "How long to retry the loader")->capture_default_str();
  app.add_option("--drain-timeout-seconds", f.drain_timeout_seconds, "Grace period for in-flight jobs on SIGTERM")->capture_default_str();
  unmask::tls::AddServerTlsFlags(app, &f.tls);
  unmask::tls::AddClientTlsFlags(app, &f.loader_tls, "loader", "the loader");
  unmask::telemetry::AddTelemetryOptions(app, &f.telemetry);
  unmask::tls::AddClientTlsFlags(app, &f.otlp_tls, "otlp", "the OTLP trace receiver");
  unmask::tls::AddServerTlsFlags(app, &f.metrics_tls, "metrics-", "the /metrics endpoint");
  CLI11_PARSE(app, argc, argv);

  auto server = unmask::executor::StartExecutorServer(f);  // says (or logs) itself what failed
  if (!server.ok()) return unmask::services::ExitCodeFor(server.status());
  unmask::services::WaitForShutdownSignal("Executor", std::chrono::seconds(f.drain_timeout_seconds));
  (*server)->Shutdown();
  return 0;
}
