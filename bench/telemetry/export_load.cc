#include "bench/telemetry/export_load.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "common/telemetry/block_spans.h"
#include "common/telemetry/tracer.h"

namespace unmask::bench {
namespace {

using namespace unmask::telemetry;
using Clock = std::chrono::steady_clock;

constexpr int kStepsPerBlock = 32;

// Records one job; returns the spans it recorded (0 when its trace is not
// sampled).
std::uint64_t RecordJob(const Tracer &tracer, std::int64_t job, int steps) {
  Span server = tracer.StartSpan("Generate", SpanContext{}, SpanKind::kServer);
  if (!server.recording())
    return 0;
  server.SetAttribute("rpc.method", "Generate");
  server.SetAttribute("model", "tiny-llada");
  server.SetAttribute("job.id", job);
  tracer.StartSpan("scheduler.queue", server.context()).End();
  Span dispatch = tracer.StartSpan("unmask.v1.Executor/Run", server.context(),
                                   SpanKind::kClient);
  Span run = tracer.StartSpan("Run", dispatch.context(), SpanKind::kServer);
  Span span = tracer.StartSpan("executor.job", run.context());
  span.SetAttribute("job.id", job);
  span.SetAttribute("sampler", "reference");
  span.SetAttribute("gen_length", static_cast<std::int64_t>(steps));
  std::uint64_t blocks_seen = 0;
  {
    BlockSpans blocks(tracer, span, "executor.block");
    for (int i = 0; i < steps; ++i) {
      blocks.Step(i / kStepsPerBlock, i, 4)
          .AddEvent("step",
                    {{"step", i}, {"unmasked", 4}, {"seconds", 0.0125}});
    }
    blocks.EndOk();
    blocks_seen = static_cast<std::uint64_t>((steps + kStepsPerBlock - 1) /
                                             kStepsPerBlock);
  }
  span.End();
  run.End();
  dispatch.End();
  server.End();
  return 5 + blocks_seen;
}

} // namespace

ExportLoadResult RunExportLoad(const OtlpExporterOptions &options,
                               double sample_ratio, const ExportLoad &load) {
  auto exporter = std::make_shared<OtlpExporter>(options);
  const Tracer tracer("bench", exporter, sample_ratio);
  ExportLoadResult r;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(load.seconds));
  for (std::int64_t job = 0;; ++job) {
    if (load.jobs_per_second > 0) {
      const std::int64_t burst = std::max(1, load.burst);
      const auto due =
          start + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(
                          static_cast<double>(job / burst * burst) /
                          load.jobs_per_second));
      if (due >= end)
        break;
      std::this_thread::sleep_until(due);
    } else if (Clock::now() >= end) {
      break;
    }
    const std::uint64_t spans = RecordJob(tracer, job, load.steps);
    ++r.jobs;
    r.sampled_jobs += spans > 0;
    r.recorded += spans;
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (load.jobs_per_second > 0)
    r.seconds =
        std::max(r.seconds, load.seconds); // the paced span, bursts included
  exporter->Flush(std::chrono::seconds(60));
  r.exported = exporter->exported_spans();
  r.dropped = exporter->dropped();
  r.failed = exporter->failed_spans();
  r.requests = exporter->requests();
  exporter->Shutdown();
  return r;
}

} // namespace unmask::bench
