#include "services/loader/loader_server.h"

#include <iostream>

#include "common/telemetry/log.h"
#include "common/registry/device_budget.h"
#include "services/loader/load_trace.h"
#include "services/loader/loader_device.h"

namespace unmask::loader {
namespace {

constexpr char kProgram[] = "unmask-loader";

// Adopts (or, with adopt false, removes) what a previous loader left in shared memory, with a
// log line per segment naming it.
void AdoptLeftovers(LoaderCore& core, bool adopt) {
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

// The flags' checks, before anything starts; sets core.device. Returns the TLS material.
StatusOr<std::optional<tls::ServerTlsMaterial>> CheckOptions(LoaderServerOptions& o) {
  if (auto spec = weights::PrecisionSpec::Parse(o.core.default_precision); !spec.ok())
    return services::ReportStartFailure(kProgram, spec.status(), "--default-precision: " + spec.status().message(), 2);
  auto device = ParseLoaderDevice(o.device);
  if (!device.ok())
    return services::ReportStartFailure(kProgram, device.status(), "--device: " + device.status().message(), 2);
  o.core.device = *device;
  auto tls = tls::LoadServerTls(o.tls);
  if (!tls.ok()) return services::ReportStartFailure(kProgram, tls.status(), tls.status().message(), 2);
  if (auto usable = CheckDeviceUsable(o.core.device); !usable.ok())
    return services::ReportStartFailure(kProgram, usable, "--device: " + usable.message(), 1);
  return *tls;
}

}  // namespace

StatusOr<std::unique_ptr<LoaderServer>> LoaderServer::Start(const LoaderServerOptions& options) {
  std::unique_ptr<LoaderServer> server(new LoaderServer(options));
  UNMASK_ASSIGN_OR_RETURN(const auto tls, CheckOptions(server->options_));
  auto started = services::StartTelemetry(kProgram, options.telemetry, options.otlp_tls, options.metrics_tls);
  UNMASK_RETURN_IF_ERROR(started.status());
  server->telemetry_ = std::move(*started);
  telemetry::Telemetry& tm = *server->telemetry_;
  if (tm.metrics_port() > 0) std::cout << "unmask-loader: metrics on port " << tm.metrics_port() << std::endl;

  server->core_ = std::make_unique<LoaderCore>(server->options_.core, MetricsLoadHooks(&tm.metrics()));
  AdoptLeftovers(*server->core_, options.adopt_segments);
  server->service_ = std::make_unique<LoaderGrpcService>(*server->core_, tm.tracer(), &tm.metrics());
  services::ServerRunner& runner = server->runner_;
  runner.AddService(server->service_.get());
  runner.SetTls(tls);
  if (auto s = runner.Start(options.listen); !s.ok()) return services::ReportStartFailure(kProgram, s, s.ToString(), 1);
  std::cout << "unmask-loader: listening on port " << runner.port() << " (" << tls::Describe(tls) << ")" << std::endl;
  for (const auto& item : options.preload) server->Preload(item);
  tm.metrics().SetMemoryUsed(static_cast<double>(server->core_->resident_bytes()));
  if (auto budget = weights::DeviceBudget::ForCpu(); budget.ok())
    tm.metrics().SetMemoryBudget(static_cast<double>(budget->available_bytes()));
  runner.SetServing(true);
  server->started_ = true;
  return server;
}

void LoaderServer::Preload(const std::string& item) {
  telemetry::Telemetry& tm = *telemetry_;
  const auto colon = item.find(':');
  const std::string model = item.substr(0, colon);
  const std::string precision = colon == std::string::npos ? "" : item.substr(colon + 1);
  // A trace of its own, like a LoadModel call: a root span with a child span per layer.
  telemetry::Span span = tm.tracer().StartSpan("Preload");
  span.SetAttribute("model_id", model);
  LoadTrace trace(tm.tracer(), span, model);
  auto info = core_->Load(model, precision, {}, [&trace](const weights::LoadProgress& p) { trace.OnProgress(p); });
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

// A loader that stops frees its segments unless told to keep them for the next loader (which
// adopts them; a killed loader leaves them too). Executors that still map an unlinked segment
// keep their mapping until they exit.
void LoaderServer::ReleaseSegments() {
  if (options_.keep_segments_on_exit) {
    for (const auto& model : core_->List()) {
      if (!model.segment_name.empty())
        telemetry::Log(telemetry::LogLevel::kInfo, {}, {}, "keeping segment for the next loader",
                       {{"model_id", model.model_id}, {"segment", model.segment_name}});
    }
  } else {
    for (const auto& model : core_->List()) (void)core_->Unload(model.model_id, /*force=*/true);
  }
}

void LoaderServer::Shutdown() {
  shutdown_.Run([this] {
    runner_.Stop(std::chrono::seconds(options_.drain_timeout_seconds));
    ReleaseSegments();
    telemetry_->Shutdown();  // sends the spans still queued
  });
}

LoaderServer::~LoaderServer() {
  if (started_) Shutdown();  // (a failed Start leaves things as a failed unmask-loader did)
}

}  // namespace unmask::loader
