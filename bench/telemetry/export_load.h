// Tracing under load: jobs recorded the way the stack records them, at a fixed
// rate, through a real OtlpExporter to a live OTLP collector; how many of the
// recorded spans arrive, how many are dropped on a full queue, how many are
// lost in failed exports.
//
// One job is the spans of one generation across the services (README "Tracing
// and metrics"): Generate (server), scheduler.queue, unmask.v1.Executor/Run
// (client), Run (server), executor.job, one executor.block span per 32 steps
// carrying a step event per step (telemetry::BlockSpans, as the executor
// records it).
#pragma once

#include <cstdint>
#include <string>

#include "common/telemetry/otlp_exporter.h"

namespace unmask::bench {

struct ExportLoad {
  double jobs_per_second = 100; // 0: as fast as the loop goes
  int burst =
      1; // jobs arriving together (every burst / jobs_per_second seconds)
  double seconds = 5;
  int steps = 128; // step events per job
};

struct ExportLoadResult {
  std::uint64_t jobs = 0;
  std::uint64_t sampled_jobs = 0;
  std::uint64_t recorded = 0; // spans recorded (of sampled jobs)
  std::uint64_t exported = 0; // accepted by the collector
  std::uint64_t dropped = 0;  // queue full
  std::uint64_t failed = 0;   // lost in a failed export
  std::uint64_t requests = 0; // Export RPCs
  double seconds =
      0; // time spent recording, at least the paced span (not the final flush)
  double jobs_per_second() const { return seconds > 0 ? jobs / seconds : 0; }
  double loss_percent() const {
    return recorded > 0 ? 100.0 * (dropped + failed) / recorded : 0;
  }
};

// Runs `load` through a fresh exporter built with `options` (its endpoint set
// by the caller) and a tracer with `sample_ratio`; waits for the exporter to
// send what is queued before counting.
ExportLoadResult RunExportLoad(const telemetry::OtlpExporterOptions &options,
                               double sample_ratio, const ExportLoad &load);

} // namespace unmask::bench
