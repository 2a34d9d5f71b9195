// unmask-loader: owns model weights in shared memory and lends them to executors. The loader
// itself is services/loader/loader_server.h; this file parses the flags and waits for a signal.
#include <CLI/CLI.hpp>

#include "common/telemetry/options.h"
#include "services/common/server_runner.h"
#include "services/common/tls_flags.h"
#include "services/loader/loader_server.h"

int main(int argc, char** argv) {
  unmask::services::BlockShutdownSignals();
  unmask::loader::LoaderServerOptions o;
  CLI::App app{"unmask-loader: streams checkpoints into shared memory for executors"};
  app.add_option("--listen", o.listen, "gRPC listen address (port 0 picks one)")->capture_default_str();
  app.add_option("--model-root", o.core.model_roots, "Directory holding model directories (repeatable)")->required();
  app.add_option("--preload", o.preload, "MODEL_ID[:precision] to load at start (repeatable)");
  app.add_option("--default-precision", o.core.default_precision, "bf16, fp16, fp32, int8, int4[:gN][:sym]")
      ->capture_default_str();
  app.add_option("--device", o.device,
                 "cpu, or cuda[:N]: also hold every model's weights on that GPU, exported with CUDA IPC, so that "
                 "executors on it compute from one copy (the shm segment stays for CPU executors)")
      ->capture_default_str();
  app.add_option("--drain-timeout-seconds", o.drain_timeout_seconds, "Grace period for in-flight calls on SIGTERM")
      ->capture_default_str();
  app.add_flag("--adopt-segments,!--no-adopt-segments", o.adopt_segments,
               "(default: on) At start, serve the complete weight segments a previous loader of these model roots left in "
               "/dev/shm (killed, crashed, or --keep-segments-on-exit) without reading checkpoints; "
               "--adopt-segments=false unlinks them instead. Partial or corrupt ones are always unlinked, "
               "and segments of a loader still running are never touched")
      ->capture_default_str();
  app.add_flag("--keep-segments-on-exit", o.keep_segments_on_exit,
               "On SIGTERM, leave the loaded segments in /dev/shm (not unlinked) for the next loader to adopt, "
               "so that executors re-attach without a reload (default: off; a killed loader leaves them too)")
      ->capture_default_str();
  unmask::tls::AddServerTlsFlags(app, &o.tls);
  unmask::telemetry::AddTelemetryOptions(app, &o.telemetry);
  unmask::tls::AddClientTlsFlags(app, &o.otlp_tls, "otlp", "the OTLP trace receiver");
  unmask::tls::AddServerTlsFlags(app, &o.metrics_tls, "metrics-", "the /metrics endpoint");
  CLI11_PARSE(app, argc, argv);

  auto server = unmask::loader::StartLoaderServer(o);  // says itself what failed
  if (!server.ok()) return unmask::services::ExitCodeFor(server.status());
  unmask::services::WaitForShutdownSignal("Loader", std::chrono::seconds(o.drain_timeout_seconds));
  (*server)->Shutdown();
  return 0;
}
