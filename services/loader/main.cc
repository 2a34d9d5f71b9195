// unmask-loader: owns model weights in shared memory and lends them to executors.
#include <CLI/CLI.hpp>
#include <iostream>

#include "common/telemetry/log.h"
#include "common/telemetry/options.h"
#include "common/weights/device_budget.h"
#include "services/common/server_runner.h"
#include "services/common/tls_flags.h"
#include "services/loader/load_trace.h"
#include "services/loader/loader_core.h"
#include "services/loader/loader_grpc.h"

namespace {

// Adopts (or, with adopt false, removes) what a previous loader left in shared memory, with a
// log line per segment naming it.
void AdoptLeftovers(unmask::loader::LoaderCore& core, bool adopt) {
  namespace telemetry = unmask::telemetry;
  const auto scan = core.AdoptLeftoverSegments(adopt);
  if (!scan.error.ok())
    telemetry::Log(telemetry::LogLevel::kWarn, {}, {}, "cannot look for leftover segments",
                   {{"error", scan.error.ToString()}});
  for (const auto& a : scan.adopted) {
    const auto& seg = a.model->segment;
    std::cout << "unmask-loader: adopted segment " << seg.name() << " (model " << a.model->manifest.model_id << ", "
              << a.precision.ToString() << ", " << seg.size() << " bytes)" << std::endl;
  }
  for (const auto& r : scan.removed)
    telemetry::Log(telemetry::LogLevel::kWarn, {}, {}, "removed leftover segment",
                   {{"segment", r.segment}, {"reason", r.reason}});
  for (const auto& r : scan.skipped)
    telemetry::Log(telemetry::LogLevel::kInfo, {}, {}, "left segment alone", {{"segment", r.segment}, {"reason", r.reason}});
}

}  // namespace

int main(int argc, char** argv) {
  unmask::services::BlockShutdownSignals();
  unmask::loader::LoaderOptions options;
  std::string listen = "0.0.0.0:50052";
  std::vector<std::string> preload;
  int drain_seconds = 30;
  bool adopt_segments = true, keep_segments = false;
  std::string device = "cpu";
  CLI::App app{"unmask-loader: streams checkpoints into shared memory for executors"};
  app.add_option("--listen", listen, "gRPC listen address (port 0 picks one)")->capture_default_str();
  app.add_option("--model-root", options.model_roots, "Directory holding model directories (repeatable)")->required();
  app.add_option("--preload", preload, "MODEL_ID[:precision] to load at start (repeatable)");
  app.add_option("--default-precision", options.default_precision, "bf16, fp16, fp32, int8, int4[:gN][:sym]")
      ->capture_default_str();
  app.add_option("--device", device,
                 "cpu, or cuda[:N]: also hold every model's weights on that GPU, exported with CUDA IPC, so that "
                 "executors on it compute from one copy (the shm segment stays for CPU executors)")
      ->capture_default_str();
  app.add_option("--drain-timeout-seconds", drain_seconds, "Grace period for in-flight calls on SIGTERM")
      ->capture_default_str();
  app.add_flag("--adopt-segments,!--no-adopt-segments", adopt_segments,
               "(default: on) At start, serve the complete weight segments a previous loader of these model roots left in "
               "/dev/shm (killed, crashed, or --keep-segments-on-exit) without reading checkpoints; "
               "--adopt-segments=false unlinks them instead. Partial or corrupt ones are always unlinked, "
               "and segments of a loader still running are never touched")
      ->capture_default_str();
  app.add_flag("--keep-segments-on-exit", keep_segments,
               "On SIGTERM, leave the loaded segments in /dev/shm (not unlinked) for the next loader to adopt, "
               "so that executors re-attach without a reload (default: off; a killed loader leaves them too)")
      ->capture_default_str();
  unmask::tls::ServerTlsOptions tls_options;
  unmask::tls::AddServerTlsFlags(app, &tls_options);
  namespace telemetry = unmask::telemetry;
  telemetry::TelemetryOptions tel;
  tel.service_name = "unmask-loader";
  tel.metrics_listen = "0.0.0.0:9092";
  telemetry::AddTelemetryOptions(app, &tel);
  CLI11_PARSE(app, argc, argv);
  if (auto spec = unmask::weights::PrecisionSpec::Parse(options.default_precision); !spec.ok()) {
    std::cerr << "unmask-loader: --default-precision: " << spec.status().message() << "\n";
    return 2;
  }
  if (auto parsed = unmask::loader::ParseLoaderDevice(device); !parsed.ok()) {
    std::cerr << "unmask-loader: --device: " << parsed.status().message() << "\n";
    return 2;
  } else {
    options.device = *parsed;
  }
  auto tls = unmask::tls::LoadServerTls(tls_options);
  if (!tls.ok()) {
    std::cerr << "unmask-loader: " << tls.status().message() << "\n";
    return 2;
  }
  if (auto usable = unmask::loader::CheckDeviceUsable(options.device); !usable.ok()) {
    std::cerr << "unmask-loader: --device: " << usable.message() << "\n";
    return 1;
  }
  auto started = telemetry::Telemetry::Start(tel);
  if (!started.ok()) {
    std::cerr << "unmask-loader: " << started.status().ToString() << "\n";
    return started.status().code() == unmask::StatusCode::kInvalidArgument ? 2 : 1;
  }
  telemetry::Telemetry& tm = **started;
  if (tm.metrics_port() > 0) std::cout << "unmask-loader: metrics on port " << tm.metrics_port() << std::endl;

  unmask::loader::LoaderCore core(options, unmask::loader::MetricsLoadHooks(&tm.metrics()));
  AdoptLeftovers(core, adopt_segments);
  unmask::loader::LoaderGrpcService service(core, tm.tracer(), &tm.metrics());
  unmask::services::ServerRunner runner("Loader");
  runner.AddService(&service);
  runner.SetTls(*tls);
  if (auto s = runner.Start(listen); !s.ok()) {
    std::cerr << "unmask-loader: " << s.ToString() << "\n";
    return 1;
  }
  std::cout << "unmask-loader: listening on port " << runner.port() << " (" << unmask::tls::Describe(*tls) << ")"
            << std::endl;
  for (const auto& item : preload) {
    const auto colon = item.find(':');
    const std::string model = item.substr(0, colon);
    const std::string precision = colon == std::string::npos ? "" : item.substr(colon + 1);
    // A trace of its own, like a LoadModel call: a root span with a child span per layer.
    telemetry::Span span = tm.tracer().StartSpan("Preload");
    span.SetAttribute("model_id", model);
    unmask::loader::LoadTrace trace(tm.tracer(), span, model);
    auto info = core.Load(model, precision, {}, [&trace](const unmask::weights::LoadProgress& p) { trace.OnProgress(p); });
    trace.End(info.ok());
    if (info.ok()) {
      span.SetOk();
      std::cout << "unmask-loader: preloaded " << model << " (" << info->resident_bytes << " bytes)" << std::endl;
    } else {
      span.SetError(info.status().ToString());
      telemetry::Log(telemetry::LogLevel::kError, span.trace_id_hex(), {}, "preload failed",
                     {{"model_id", model}, {"error", info.status().ToString()}});
    }
  }
  tm.metrics().SetMemoryUsed(static_cast<double>(core.resident_bytes()));
  if (auto budget = unmask::weights::DeviceBudget::ForCpu(); budget.ok())
    tm.metrics().SetMemoryBudget(static_cast<double>(budget->available_bytes()));
  runner.SetServing(true);
  runner.WaitForSignalAndDrain(std::chrono::seconds(drain_seconds));
  // A loader that stops frees its segments unless told to keep them for the next loader (which
  // adopts them; a killed loader leaves them too). Executors that still map an unlinked segment
  // keep their mapping until they exit.
  if (keep_segments) {
    for (const auto& model : core.List()) {
      if (!model.segment_name.empty())
        telemetry::Log(telemetry::LogLevel::kInfo, {}, {}, "keeping segment for the next loader",
                       {{"model_id", model.model_id}, {"segment", model.segment_name}});
    }
  } else {
    for (const auto& model : core.List()) (void)core.Unload(model.model_id, /*force=*/true);
  }
  tm.Shutdown();  // sends the spans still queued
  return 0;
}
