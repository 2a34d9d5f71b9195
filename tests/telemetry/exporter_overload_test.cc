// Tracing under overload, against a live collector: spans past the exporter's
// queue are dropped and counted, the metrics endpoint shows the drops, the
// exports and the queue, the queue and batch sizes come from the flags, and
// head sampling records the configured share of traces.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/telemetry/metrics.h"
#include "common/telemetry/options.h"
#include "common/telemetry/otlp_exporter.h"
#include "common/telemetry/telemetry.h"
#include "common/telemetry/tracer.h"
#include "tests/telemetry/test_collector.h"

namespace unmask::telemetry {
namespace {

using ::testing::HasSubstr;
using testing::HttpGet;
using testing::TestCollector;

TEST(ExporterOverload, ATinyQueueDropsAndTheMetricCountsEveryDrop) {
  TestCollector collector;
  OtlpExporterOptions eo;
  eo.endpoint = collector.endpoint();
  eo.max_queue_spans = 4;
  eo.max_batch_spans = 1000; // never full: nothing leaves before Flush
  eo.flush_interval = std::chrono::hours(1);
  auto exporter = std::make_shared<OtlpExporter>(eo);
  Tracer tracer("svc", exporter, 1.0);
  ServiceMetrics metrics;
  metrics.WatchExporter(exporter);
  auto exposer = MetricsExposer::Start("127.0.0.1:0");
  ASSERT_TRUE(exposer.ok()) << exposer.status().ToString();
  (*exposer)->Register(metrics);

  for (int i = 0; i < 10; ++i)
    tracer.StartSpan("job").End();
  EXPECT_EQ(exporter->dropped(), 6u);
  auto body = HttpGet((*exposer)->port(), "/metrics").body;
  EXPECT_THAT(
      body,
      HasSubstr("unmask_trace_spans_dropped_total{reason=\"queue_full\"} 6\n"));
  EXPECT_THAT(body, HasSubstr("unmask_trace_export_queue_spans 4\n"));
  EXPECT_THAT(body, HasSubstr("unmask_trace_spans_exported_total 0\n"));

  ASSERT_TRUE(exporter->Flush(std::chrono::seconds(10)));
  EXPECT_EQ(collector.span_count(), 4u);
  body = HttpGet((*exposer)->port(), "/metrics").body;
  EXPECT_THAT(body, HasSubstr("unmask_trace_spans_exported_total 4\n"));
  EXPECT_THAT(body, HasSubstr("unmask_trace_export_queue_spans 0\n"));
  EXPECT_THAT(
      body,
      HasSubstr("unmask_trace_spans_dropped_total{reason=\"queue_full\"} 6\n"));
  EXPECT_THAT(
      body,
      HasSubstr(
          "unmask_trace_spans_dropped_total{reason=\"export_failed\"} 0\n"));

  // Room again once sent: every span is either at the collector or counted as
  // dropped.
  for (int i = 0; i < 3; ++i)
    tracer.StartSpan("job").End();
  ASSERT_TRUE(exporter->Flush(std::chrono::seconds(10)));
  EXPECT_EQ(collector.span_count(), 7u);
  EXPECT_EQ(exporter->exported_spans() + exporter->dropped(), 13u);
  exporter->Shutdown();
}

TEST(ExporterOverload, QueueAndBatchFlagsReachTheExporter) {
  CLI::App app("test");
  TelemetryOptions o;
  AddTelemetryOptions(app, &o);
  TestCollector collector;
  const std::string endpoint = collector.endpoint();
  const char *argv[] = {"prog",
                        "--otlp-endpoint",
                        endpoint.c_str(),
                        "--trace-queue-spans",
                        "64",
                        "--trace-batch-spans",
                        "8",
                        "--trace-flush-interval-ms",
                        "50"};
  app.parse(9, const_cast<char **>(argv));
  auto t = Telemetry::Start(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const OtlpExporterOptions &eo = (*t)->exporter()->options();
  EXPECT_EQ(eo.max_queue_spans, 64u);
  EXPECT_EQ(eo.max_batch_spans, 8u);
  EXPECT_EQ(eo.flush_interval, std::chrono::milliseconds(50));
  // 20 spans: two full batches of 8 go at once, the last 4 on the 50 ms timer.
  for (int i = 0; i < 20; ++i)
    (*t)->tracer().StartSpan("s").End();
  ASSERT_TRUE(collector.WaitForSpans(20, std::chrono::seconds(10)));
  for (std::size_t n : collector.batch_sizes())
    EXPECT_LE(n, 8u);
  (*t)->Shutdown();
}

TEST(ExporterOverload, BadQueueSettingsNameTheFlag) {
  TelemetryOptions o;
  o.trace_queue_spans = 0;
  EXPECT_THAT(ValidateTelemetryOptions(o).message(),
              HasSubstr("--trace-queue-spans"));
  o = TelemetryOptions();
  o.trace_queue_spans = 16;
  o.trace_batch_spans = 32;
  EXPECT_THAT(ValidateTelemetryOptions(o).message(),
              HasSubstr("--trace-batch-spans"));
  o = TelemetryOptions();
  o.trace_flush_interval_ms = 0;
  EXPECT_THAT(ValidateTelemetryOptions(o).message(),
              HasSubstr("--trace-flush-interval-ms"));
}

TEST(ExporterOverload, HeadSamplingRecordsTheConfiguredShareOfTraces) {
  TestCollector collector;
  collector.set_count_only(true);
  TelemetryOptions o;
  o.otlp_endpoint = collector.endpoint();
  o.trace_sample_ratio = 0.1;
  auto t = Telemetry::Start(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const Tracer &tracer = (*t)->tracer();
  constexpr int kTraces = 4000;
  std::size_t sampled = 0;
  for (int i = 0; i < kTraces; ++i) {
    Span root = tracer.StartSpan("job");
    Span child = tracer.StartSpan("block", root.context());
    EXPECT_EQ(child.recording(),
              root.recording()); // whole traces, never half of one
    sampled += root.recording();
  }
  // 10% of 4000 is 400; the binomial's standard deviation is 19: 5 of them
  // either side.
  EXPECT_GT(sampled, 305u);
  EXPECT_LT(sampled, 495u);
  (*t)->Shutdown();
  EXPECT_EQ(collector.span_count(),
            2 * sampled); // all of them arrived, nothing else
  EXPECT_EQ((*t)->exporter()->dropped(), 0u);
}

} // namespace
} // namespace unmask::telemetry
