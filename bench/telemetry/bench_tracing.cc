// What tracing costs a denoising step. The executor records every step as an event on the job's
// span; this measures that call, side by side in one run, with tracing
//   off        no --otlp-endpoint: the Tracer has no exporter, spans are no-op objects;
//   sampled 0  an exporter, but --trace-sample-ratio 0: spans get ids, record nothing;
//   sampled 1  an exporter sending to a live OTLP collector in this process (a real gRPC
//              server on loopback), every span recorded and exported.
// A loop with no span at all is the baseline. Each job span gets `--steps` step events; the
// span's start and end are measured apart (spans without events).
//
// Then the loss under load (export_load.h): jobs at fixed rates (`--load-rates`), one by one and
// in bursts (`--load-burst`), through the exporter settings before issue 21 and the current
// defaults side by side; then past the exporter's capacity (`--overload-rate`) with every trace
// recorded and with head sampling (`--load-sample-ratio`).
#include <CLI/CLI.hpp>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "bench/common/bench_report.h"
#include "bench/telemetry/export_load.h"
#include "common/telemetry/block_spans.h"
#include "common/telemetry/otlp_exporter.h"
#include "common/telemetry/tracer.h"
#include "tests/telemetry/test_collector.h"

namespace {

using namespace unmask::telemetry;
using unmask::bench::ExportLoad;
using unmask::bench::ExportLoadResult;
using unmask::bench::RunExportLoad;
using Clock = std::chrono::steady_clock;

// Makes the compiler assume *p is read and changed, so the loop is not folded away.
template <typename T>
inline void Escape(T* p) {
  asm volatile("" : : "g"(p) : "memory");
}

// Records everything, keeps nothing: the cost of recording without the export competing for CPU.
class DiscardExporter : public SpanExporter {
 public:
  void Export(std::unique_ptr<SpanData> span) override {
    ++spans_;
    span.reset();
  }
  std::uint64_t spans() const { return spans_; }

 private:
  std::uint64_t spans_ = 0;
};

struct Config {
  int spans = 2000;
  int steps = 128;
  int repeats = 5;
};

// Wall time and this thread's CPU time (the second is what the step loop pays even when other
// processes share the cores; it leaves out the exporter's and the collector's threads).
struct Stopwatch {
  Clock::time_point wall0 = Clock::now();
  timespec cpu0 = ThreadCpu();
  static timespec ThreadCpu() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t;
  }
  std::pair<double, double> ElapsedNs() const {
    const double wall = std::chrono::duration<double, std::nano>(Clock::now() - wall0).count();
    const timespec c = ThreadCpu();
    const double cpu = (c.tv_sec - cpu0.tv_sec) * 1e9 + (c.tv_nsec - cpu0.tv_nsec);
    return {wall, cpu};
  }
};

struct Cost {
  double wall_ns = 0;
  double cpu_ns = 0;
};

// Per step event over `spans` job spans of `steps` events each (start/end included once per
// span; see SpanOnly for that part alone).
constexpr int kStepsPerBlock = 32;

Cost StepEvents(const Tracer* tracer, const Config& c) {
  Stopwatch sw;
  for (int s = 0; s < c.spans; ++s) {
    if (tracer == nullptr) {
      for (int i = 0; i < c.steps; ++i) {
        int step = i;
        Escape(&step);
      }
      continue;
    }
    // As the executor records a job: a job span, a child span per block, the step events on it.
    Span span = tracer->StartSpan("executor.job");
    BlockSpans blocks(*tracer, span, "executor.block");
    for (int i = 0; i < c.steps; ++i) {
      blocks.Step(i / kStepsPerBlock, i, 4).AddEvent("step", {{"step", i}, {"unmasked", 4}, {"seconds", 0.0125}});
      Escape(&span);
    }
    blocks.EndOk();
  }
  const auto [wall, cpu] = sw.ElapsedNs();
  const double n = static_cast<double>(c.spans) * c.steps;
  return {wall / n, cpu / n};
}

// Per span start + end (no events).
Cost SpanOnly(const Tracer* tracer, const Config& c) {
  const int n = c.spans * 4;
  Stopwatch sw;
  for (int s = 0; s < n; ++s) {
    if (tracer == nullptr) {
      int x = s;
      Escape(&x);
      continue;
    }
    Span span = tracer->StartSpan("executor.job");
    Escape(&span);
  }
  const auto [wall, cpu] = sw.ElapsedNs();
  return {wall / n, cpu / n};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  std::string mode;
  Cost event;
  Cost span;
};

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

double LoadAverage() {
  double load = 0;
  if (getloadavg(&load, 1) != 1) return -1;
  return load;
}

// Exporter settings before issue 21 (queue 2048 spans, batches of 512, a flush a second) and now.
OtlpExporterOptions BeforeIssue21(const std::string& endpoint) {
  OtlpExporterOptions o;
  o.endpoint = endpoint;
  o.max_queue_spans = 2048;
  o.max_batch_spans = 512;
  o.flush_interval = std::chrono::milliseconds(1000);
  return o;
}

std::string Settings(const OtlpExporterOptions& o) {
  return "queue " + std::to_string(o.max_queue_spans) + ", batch " + std::to_string(o.max_batch_spans) + ", flush " +
         std::to_string(o.flush_interval.count()) + " ms";
}

std::string LoadTable(const std::string& endpoint, ExportLoad load, const std::vector<double>& rates, int burst,
                      double overload_rate, double sample_ratio) {
  OtlpExporterOptions now;
  now.endpoint = endpoint;
  struct Run {
    std::string settings;
    OtlpExporterOptions options;
    double ratio;
    double rate;
    int burst;
  };
  const std::string before_name = "before: " + Settings(BeforeIssue21(endpoint));
  const std::string now_name = "now: " + Settings(now);
  std::vector<Run> runs;
  for (double rate : rates) {
    runs.push_back({before_name, BeforeIssue21(endpoint), 1.0, rate, 1});
    runs.push_back({now_name, now, 1.0, rate, 1});
  }
  runs.push_back({before_name, BeforeIssue21(endpoint), 1.0, rates.empty() ? 100 : rates.front(), burst});
  runs.push_back({now_name, now, 1.0, rates.empty() ? 100 : rates.front(), burst});
  runs.push_back({now_name, now, 1.0, overload_rate, 1});
  runs.push_back({now_name + ", sample ratio " + Num(sample_ratio), now, sample_ratio, overload_rate, 1});
  std::string md =
      "\nLoss under load: jobs recorded as the stack records them (Generate, scheduler.queue, "
      "unmask.v1.Executor/Run, Run, executor.job and one executor.block span per 32 steps with an event per "
      "step: " + std::to_string(5 + (load.steps + 31) / 32) + " spans and " + std::to_string(load.steps) +
      " step events per job), paced at a fixed rate (alone, or in bursts of jobs ending together) for " +
      Num(load.seconds) + " s through a fresh exporter to the same live collector, then flushed. Settings "
      "before issue 21 and now side by side in one run (the 2 cores are shared with the collector and with other "
      "work: noisy, compare rows of one run). Lost = dropped on a full queue + lost in failed exports, of the "
      "spans recorded; with head sampling, of the spans of sampled traces (the others are never recorded).\n\n";
  md += "| exporter settings | jobs/s | arriving | spans recorded | exported | dropped (queue full) | "
        "failed exports | lost | export requests |\n";
  md += "|---|---|---|---|---|---|---|---|---|\n";
  char buf[512];
  for (const Run& run : runs) {
    load.jobs_per_second = run.rate;
    load.burst = run.burst;
    const ExportLoadResult r = RunExportLoad(run.options, run.ratio, load);
    const std::string arriving = run.burst > 1 ? "bursts of " + std::to_string(run.burst) : "one by one";
    std::snprintf(buf, sizeof(buf), "| %s | %.0f | %s | %llu | %llu | %llu | %llu | %.2f%% | %llu |\n",
                  run.settings.c_str(), r.jobs_per_second(), arriving.c_str(),
                  static_cast<unsigned long long>(r.recorded), static_cast<unsigned long long>(r.exported),
                  static_cast<unsigned long long>(r.dropped), static_cast<unsigned long long>(r.failed),
                  r.loss_percent(), static_cast<unsigned long long>(r.requests));
    md += buf;
    std::cerr << buf;
  }
  return md;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("bench_tracing: cost per step of recording a step event, tracing off / sampled 0 / sampled 1");
  Config c;
  std::string doc;
  app.add_option("--spans", c.spans, "job spans per repeat")->capture_default_str();
  app.add_option("--steps", c.steps, "step events per job span")->capture_default_str();
  app.add_option("--repeats", c.repeats, "repeats (the median is reported)")->capture_default_str();
  ExportLoad load;
  std::vector<double> load_rates = {100, 1000};
  int load_burst = 250;
  double overload_rate = 4000;
  double load_sample_ratio = 0.1;
  app.add_option("--load-seconds", load.seconds, "seconds per load run")->capture_default_str();
  app.add_option("--load-rates", load_rates, "jobs per second of the load runs (0 = flat out)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--load-burst", load_burst, "jobs per burst of the burst runs (at the first rate)")->capture_default_str();
  app.add_option("--overload-rate", overload_rate, "jobs per second past the exporter's capacity, sampled 1 and sampled")
      ->capture_default_str();
  app.add_option("--load-sample-ratio", load_sample_ratio, "head sampling ratio of the last load run")
      ->capture_default_str();
  app.add_option("--doc", doc, "markdown file whose section 'tracing' is replaced with the results");
  CLI11_PARSE(app, argc, argv);

  unmask::telemetry::testing::TestCollector collector;
  collector.set_count_only(true);
  OtlpExporterOptions eo;
  eo.endpoint = collector.endpoint();
  auto live = std::make_shared<OtlpExporter>(eo);
  auto unsampled_exporter = std::make_shared<OtlpExporter>(eo);

  const Tracer off("bench", nullptr, 1.0);
  const Tracer sampled0("bench", unsampled_exporter, 0.0);
  const Tracer sampled1("bench", live, 1.0);
  auto discard = std::make_shared<DiscardExporter>();
  const Tracer recorded("bench", discard, 1.0);

  struct Mode {
    const char* name;
    const Tracer* tracer;
  };
  const std::vector<Mode> modes = {{"no span (baseline loop)", nullptr},
                                   {"off (no endpoint)", &off},
                                   {"on, sample ratio 0", &sampled0},
                                   {"on, sample ratio 1, exporter discards", &recorded},
                                   {"on, sample ratio 1, live collector", &sampled1}};
  const double load_before = LoadAverage();
  std::vector<std::vector<double>> ev_wall(modes.size()), ev_cpu(modes.size()), sp_wall(modes.size()),
      sp_cpu(modes.size());
  // Interleave the modes within each repeat so that all see the same machine conditions.
  for (int r = 0; r < c.repeats + 1; ++r) {
    for (std::size_t m = 0; m < modes.size(); ++m) {
      const Cost e = StepEvents(modes[m].tracer, c);
      const Cost s = SpanOnly(modes[m].tracer, c);
      if (r == 0) continue;  // warm-up
      ev_wall[m].push_back(e.wall_ns);
      ev_cpu[m].push_back(e.cpu_ns);
      sp_wall[m].push_back(s.wall_ns);
      sp_cpu[m].push_back(s.cpu_ns);
    }
  }
  const double load_after = LoadAverage();
  live->Flush(std::chrono::seconds(30));

  std::vector<Row> rows;
  for (std::size_t m = 0; m < modes.size(); ++m) {
    Row row;
    row.mode = modes[m].name;
    row.event = {Median(ev_wall[m]), Median(ev_cpu[m])};
    row.span = {Median(sp_wall[m]), Median(sp_cpu[m])};
    rows.push_back(row);
  }

  char buf[1024];
  std::string md;
  std::snprintf(buf, sizeof(buf),
                "Cost of recording one denoising step the way the executor does: a step event, "
                "`blocks.Step(block, i, 4).AddEvent(\"step\", {{\"step\", i}, {\"unmasked\", 4}, "
                "{\"seconds\", 0.0125}})`, on the block span (telemetry::BlockSpans, blocks of %d steps) of "
                "job spans of %d steps (job and block span start and end amortized over the steps); %d job "
                "spans per repeat, median of %d repeats, modes interleaved. "
                "\"span start + end\" is StartSpan + End alone. CPU is this thread's CPU time "
                "(CLOCK_THREAD_CPUTIME_ID): what the step loop pays, unaffected by other processes but leaving "
                "out the exporter's background thread; wall is elapsed time. The collector is a real OTLP/gRPC "
                "server in this process (loopback), so with it the exporter and the collector share the cores "
                "with the loop; this loop records spans far faster than any stack makes them (millions a second), "
                "so what the exporter drops here says nothing about loss under load: see the table after "
                "this one. Load average (1 min) %.2f before, %.2f after.\n\n",
                kStepsPerBlock, c.steps, c.spans, c.repeats, load_before, load_after);
  md += buf;
  md += "| tracing | ns per step event, CPU | ns per step event, wall | ns per span start + end, CPU |\n";
  md += "|---|---|---|---|\n";
  for (const auto& r : rows) {
    std::snprintf(buf, sizeof(buf), "| %s | %.1f | %.1f | %.1f |\n", r.mode.c_str(), r.event.cpu_ns, r.event.wall_ns,
                  r.span.cpu_ns);
    md += buf;
  }
  md += LoadTable(collector.endpoint(), load, load_rates, load_burst, overload_rate, load_sample_ratio);
  md += "\nMachine: " + unmask::bench::MachineDescription() + ". Command: `" +
        unmask::bench::CommandLine(argc, argv) + "`\n";
  std::cout << md;
  if (!doc.empty() && !unmask::bench::ReplaceDocSection(doc, "tracing", md)) {
    std::cerr << "cannot write " << doc << "\n";
    return 1;
  }
  live->Shutdown();
  unsampled_exporter->Shutdown();
  return 0;
}
