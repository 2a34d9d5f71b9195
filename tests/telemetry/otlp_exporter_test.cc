#include "common/telemetry/otlp_exporter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "common/telemetry/tracer.h"
#include "tests/telemetry/test_collector.h"

namespace unmask::telemetry {
namespace {

using testing::ReceivedSpan;
using testing::TestCollector;
using testing::UnusedPort;
namespace otlp_trace = opentelemetry::proto::trace::v1;

std::string Bytes(const std::uint8_t* p, std::size_t n) { return std::string(reinterpret_cast<const char*>(p), n); }

OtlpExporterOptions Options(const std::string& endpoint) {
  OtlpExporterOptions o;
  o.endpoint = endpoint;
  o.flush_interval = std::chrono::hours(1);  // tests flush explicitly unless they test the timer
  o.export_timeout = std::chrono::seconds(60);  // generous: sanitizer builds on a loaded machine are slow
  return o;
}

TEST(OtlpExporter, CollectorReceivesSpansWithTraceAndParentIds) {
  TestCollector collector;
  auto exporter = std::make_shared<OtlpExporter>(Options(collector.endpoint()));
  Tracer tracer("unmask-scheduler", exporter, 1.0);
  SpanContext root_ctx, child_ctx, grandchild_ctx;
  {
    Span root = tracer.StartSpan("scheduler.Generate", SpanKind::kServer);
    Span child = tracer.StartSpan("queue.wait", root.context());
    Span grandchild = tracer.StartSpan("executor.Run", child.context(), SpanKind::kClient);
    grandchild.AddEvent("step", {{"step", 7}, {"unmasked", 2}});
    grandchild.SetAttribute("job_id", "j-1");
    grandchild.SetOk();
    root_ctx = root.context();
    child_ctx = child.context();
    grandchild_ctx = grandchild.context();
  }
  ASSERT_TRUE(exporter->Flush(std::chrono::seconds(10)));
  ASSERT_TRUE(collector.WaitForSpans(3, std::chrono::seconds(10)));
  EXPECT_EQ(exporter->exported_spans(), 3u);
  EXPECT_EQ(exporter->export_errors(), 0u);
  EXPECT_EQ(exporter->dropped(), 0u);

  std::map<std::string, otlp_trace::Span> by_name;
  for (const ReceivedSpan& r : collector.spans()) {
    EXPECT_EQ(r.service, "unmask-scheduler");
    EXPECT_EQ(r.scope, "unmask");
    by_name[r.span.name()] = r.span;
  }
  ASSERT_EQ(by_name.size(), 3u);
  const std::string trace_id = Bytes(root_ctx.trace_id.data(), 16);
  for (const auto& [name, s] : by_name) EXPECT_EQ(s.trace_id(), trace_id) << name;
  const auto& root = by_name["scheduler.Generate"];
  const auto& child = by_name["queue.wait"];
  const auto& grandchild = by_name["executor.Run"];
  EXPECT_TRUE(root.parent_span_id().empty());
  EXPECT_EQ(root.span_id(), Bytes(root_ctx.span_id.data(), 8));
  EXPECT_EQ(child.parent_span_id(), Bytes(root_ctx.span_id.data(), 8));
  EXPECT_EQ(child.span_id(), Bytes(child_ctx.span_id.data(), 8));
  EXPECT_EQ(grandchild.parent_span_id(), Bytes(child_ctx.span_id.data(), 8));
  EXPECT_EQ(grandchild.span_id(), Bytes(grandchild_ctx.span_id.data(), 8));
  EXPECT_EQ(root.kind(), otlp_trace::Span::SPAN_KIND_SERVER);
  EXPECT_EQ(grandchild.kind(), otlp_trace::Span::SPAN_KIND_CLIENT);
  ASSERT_EQ(grandchild.events_size(), 1);
  EXPECT_EQ(grandchild.events(0).attributes(0).value().int_value(), 7);
  EXPECT_EQ(grandchild.status().code(), otlp_trace::Status::STATUS_CODE_OK);
}

TEST(OtlpExporter, SendsWhenABatchIsFull) {
  TestCollector collector;
  auto o = Options(collector.endpoint());
  o.max_batch_spans = 4;
  auto exporter = std::make_shared<OtlpExporter>(o);
  Tracer tracer("svc", exporter, 1.0);
  for (int i = 0; i < 8; ++i) tracer.StartSpan("s").End();
  // No Flush: the timer is an hour away, so only full batches can have gone out.
  ASSERT_TRUE(collector.WaitForSpans(8, std::chrono::seconds(10)));
  for (std::size_t n : collector.batch_sizes()) EXPECT_LE(n, 4u);
}

TEST(OtlpExporter, SendsOnTheTimer) {
  TestCollector collector;
  auto o = Options(collector.endpoint());
  o.flush_interval = std::chrono::milliseconds(50);
  auto exporter = std::make_shared<OtlpExporter>(o);
  Tracer tracer("svc", exporter, 1.0);
  tracer.StartSpan("lonely").End();
  ASSERT_TRUE(collector.WaitForSpans(1, std::chrono::seconds(10)));
  EXPECT_EQ(collector.spans().at(0).span.name(), "lonely");
}

TEST(OtlpExporter, BoundedQueueDropsWhenFull) {
  TestCollector collector;
  auto o = Options(collector.endpoint());
  o.max_queue_spans = 10;
  o.max_batch_spans = 1000;  // never full: nothing leaves until Flush
  auto exporter = std::make_shared<OtlpExporter>(o);
  Tracer tracer("svc", exporter, 1.0);
  for (int i = 0; i < 25; ++i) tracer.StartSpan("s").End();
  EXPECT_EQ(exporter->queue_size(), 10u);
  EXPECT_EQ(exporter->dropped(), 15u);
  ASSERT_TRUE(exporter->Flush(std::chrono::seconds(10)));
  EXPECT_EQ(collector.span_count(), 10u);
  EXPECT_EQ(exporter->exported_spans(), 10u);
  // Room again after the flush.
  tracer.StartSpan("s").End();
  EXPECT_EQ(exporter->dropped(), 15u);
  EXPECT_EQ(exporter->queue_size(), 1u);
}

TEST(OtlpExporter, DeadCollectorNeitherBlocksNorGrows) {
  auto o = Options("127.0.0.1:" + std::to_string(UnusedPort()));
  o.max_queue_spans = 256;
  o.max_batch_spans = 64;
  o.export_timeout = std::chrono::milliseconds(500);
  auto exporter = std::make_shared<OtlpExporter>(o);
  Tracer tracer("svc", exporter, 1.0);
  constexpr int kSpans = 10000;
  for (int i = 0; i < kSpans; ++i) {
    Span s = tracer.StartSpan("request");
    s.AddEvent("step", {{"step", i}});
  }
  // Everything was either queued (never more than the bound) or dropped on the spot.
  EXPECT_LE(exporter->queue_size(), 256u);
  EXPECT_GT(exporter->dropped(), 0u);
  ASSERT_TRUE(exporter->Flush(std::chrono::seconds(30)));
  EXPECT_GT(exporter->export_errors(), 0u);
  EXPECT_GT(exporter->failed_spans(), 0u);
  EXPECT_EQ(exporter->exported_spans(), 0u);
  EXPECT_EQ(exporter->dropped() + exporter->failed_spans(), static_cast<std::uint64_t>(kSpans));
  EXPECT_EQ(exporter->queue_size(), 0u);
}

void JobSpan(const Tracer& tracer, int steps) {
  Span span = tracer.StartSpan("executor.job");
  span.SetAttribute("job_id", "job-0123456789");
  for (int i = 0; i < steps; ++i) span.AddEvent("step", {{"step", i}, {"unmasked", 4}, {"seconds", 0.0125}});
}

TEST(OtlpExporter, LargeBatchesAreSplitUnderTheRequestLimit) {
  TestCollector collector;
  auto o = Options(collector.endpoint());
  o.max_request_bytes = 16 * 1024;
  auto exporter = std::make_shared<OtlpExporter>(o);
  Tracer tracer("svc", exporter, 1.0);
  for (int i = 0; i < 20; ++i) JobSpan(tracer, 64);  // ~5 KiB each
  ASSERT_TRUE(exporter->Flush(std::chrono::seconds(10)));
  EXPECT_EQ(collector.span_count(), 20u);
  EXPECT_EQ(exporter->exported_spans(), 20u);
  EXPECT_GT(collector.request_count(), 4u);
  EXPECT_EQ(exporter->requests(), collector.request_count());
  EXPECT_LE(collector.max_request_bytes(), o.max_request_bytes);
}

// The defaults must get a full batch of long job spans through a receiver that keeps gRPC's
// default 4 MiB message limit (the in-test collector does, as Jaeger does).
TEST(OtlpExporter, DefaultsGetBigJobSpansThroughA4MiBReceiver) {
  TestCollector collector;
  auto o = Options(collector.endpoint());
  auto exporter = std::make_shared<OtlpExporter>(o);
  Tracer tracer("svc", exporter, 1.0);
  for (int i = 0; i < 600; ++i) JobSpan(tracer, 128);
  ASSERT_TRUE(exporter->Flush(std::chrono::seconds(60)));
  EXPECT_EQ(exporter->export_errors(), 0u);
  EXPECT_EQ(exporter->dropped(), 0u);
  EXPECT_EQ(collector.span_count(), 600u);
  EXPECT_LE(collector.max_request_bytes(), 4u << 20);
}

TEST(OtlpExporter, QueueIsBoundedInBytes) {
  TestCollector collector;
  auto o = Options(collector.endpoint());
  o.max_batch_spans = 1000;
  o.max_queue_bytes = 64 * 1024;
  auto exporter = std::make_shared<OtlpExporter>(o);
  Tracer tracer("svc", exporter, 1.0);
  for (int i = 0; i < 50; ++i) JobSpan(tracer, 64);
  EXPECT_GT(exporter->dropped(), 0u);
  EXPECT_LT(exporter->queue_size(), 50u);
  EXPECT_GT(exporter->queue_size(), 0u);
  EXPECT_LE(exporter->queue_bytes(), o.max_queue_bytes);
  EXPECT_EQ(exporter->queue_size() + exporter->dropped(), 50u);
}

TEST(OtlpExporter, PartialSuccessCountsRejectedSpans) {
  TestCollector collector;
  collector.set_reject_per_request(1);
  auto exporter = std::make_shared<OtlpExporter>(Options(collector.endpoint()));
  Tracer tracer("svc", exporter, 1.0);
  for (int i = 0; i < 3; ++i) tracer.StartSpan("s").End();
  ASSERT_TRUE(exporter->Flush(std::chrono::seconds(10)));
  EXPECT_EQ(collector.request_count(), 1u);
  EXPECT_EQ(exporter->exported_spans(), 2u);
  EXPECT_EQ(exporter->failed_spans(), 1u);
  EXPECT_EQ(exporter->export_errors(), 0u);
}

TEST(OtlpExporter, ShutdownSendsWhatIsQueuedThenDrops) {
  TestCollector collector;
  auto exporter = std::make_shared<OtlpExporter>(Options(collector.endpoint()));
  Tracer tracer("svc", exporter, 1.0);
  for (int i = 0; i < 3; ++i) tracer.StartSpan("s").End();
  exporter->Shutdown(std::chrono::seconds(10));
  EXPECT_EQ(collector.span_count(), 3u);
  tracer.StartSpan("late").End();
  EXPECT_EQ(exporter->dropped(), 1u);
  exporter->Shutdown();  // idempotent
}

}  // namespace
}  // namespace unmask::telemetry
