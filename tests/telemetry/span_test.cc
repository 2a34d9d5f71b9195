#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "common/telemetry/otlp_convert.h"
#include "common/telemetry/span.h"
#include "common/telemetry/tracer.h"
#include "tests/telemetry/memory_exporter.h"

namespace unmask::telemetry {
namespace {

using testing::MemoryExporter;
namespace otlp_trace = opentelemetry::proto::trace::v1;
namespace otlp_common = opentelemetry::proto::common::v1;

const otlp_common::AnyValue* FindAttr(const google::protobuf::RepeatedPtrField<otlp_common::KeyValue>& attrs,
                                      const std::string& key) {
  for (const auto& kv : attrs)
    if (kv.key() == key) return &kv.value();
  return nullptr;
}

std::string Bytes(const std::uint8_t* p, std::size_t n) { return std::string(reinterpret_cast<const char*>(p), n); }

TEST(Span, AttributesEventsAndStatusEndUpInTheOtlpRequest) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer tracer("unmask-executor", exporter, 1.0);
  SpanContext ctx;
  {
    Span span = tracer.StartSpan("executor.Run", SpanKind::kServer);
    ASSERT_TRUE(span.recording());
    ctx = span.context();
    span.SetAttribute("job_id", "job-17");
    span.SetAttribute("model_id", std::string("llada-8b"));
    span.SetAttribute("gen_length", 128);
    span.SetAttribute("temperature", 0.5);
    span.SetAttribute("stop_at_eos", true);
    span.AddEvent("step", {{"step", 0}, {"unmasked", 4}, {"seconds", 0.012}});
    span.AddEvent("step", {{"step", 1}, {"block", "b0"}});
    span.AddEvent("done");
    span.SetError("RESOURCE_EXHAUSTED: out of memory");
  }  // the destructor ends the span
  auto spans = exporter->Take();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_GE(spans[0]->end_unix_nano, spans[0]->start_unix_nano);

  const auto req = ToOtlpRequest(spans);
  ASSERT_EQ(req.resource_spans_size(), 1);
  const auto& rs = req.resource_spans(0);
  const auto* service = FindAttr(rs.resource().attributes(), "service.name");
  ASSERT_NE(service, nullptr);
  EXPECT_EQ(service->string_value(), "unmask-executor");
  ASSERT_EQ(rs.scope_spans_size(), 1);
  EXPECT_EQ(rs.scope_spans(0).scope().name(), "unmask");
  ASSERT_EQ(rs.scope_spans(0).spans_size(), 1);
  const otlp_trace::Span& s = rs.scope_spans(0).spans(0);

  EXPECT_EQ(s.trace_id(), Bytes(ctx.trace_id.data(), 16));
  EXPECT_EQ(s.span_id(), Bytes(ctx.span_id.data(), 8));
  EXPECT_TRUE(s.parent_span_id().empty());
  EXPECT_EQ(s.flags() & otlp_trace::SPAN_FLAGS_TRACE_FLAGS_MASK, 1u);
  EXPECT_EQ(s.name(), "executor.Run");
  EXPECT_EQ(s.kind(), otlp_trace::Span::SPAN_KIND_SERVER);
  EXPECT_GT(s.start_time_unix_nano(), 0u);
  EXPECT_GE(s.end_time_unix_nano(), s.start_time_unix_nano());

  ASSERT_NE(FindAttr(s.attributes(), "job_id"), nullptr);
  EXPECT_EQ(FindAttr(s.attributes(), "job_id")->string_value(), "job-17");
  EXPECT_EQ(FindAttr(s.attributes(), "model_id")->string_value(), "llada-8b");
  EXPECT_EQ(FindAttr(s.attributes(), "gen_length")->value_case(), otlp_common::AnyValue::kIntValue);
  EXPECT_EQ(FindAttr(s.attributes(), "gen_length")->int_value(), 128);
  EXPECT_DOUBLE_EQ(FindAttr(s.attributes(), "temperature")->double_value(), 0.5);
  EXPECT_EQ(FindAttr(s.attributes(), "stop_at_eos")->value_case(), otlp_common::AnyValue::kBoolValue);
  EXPECT_TRUE(FindAttr(s.attributes(), "stop_at_eos")->bool_value());

  ASSERT_EQ(s.events_size(), 3);
  EXPECT_EQ(s.events(0).name(), "step");
  EXPECT_EQ(FindAttr(s.events(0).attributes(), "step")->int_value(), 0);
  EXPECT_EQ(FindAttr(s.events(0).attributes(), "unmasked")->int_value(), 4);
  EXPECT_DOUBLE_EQ(FindAttr(s.events(0).attributes(), "seconds")->double_value(), 0.012);
  EXPECT_EQ(FindAttr(s.events(1).attributes(), "block")->string_value(), "b0");
  EXPECT_EQ(s.events(2).name(), "done");
  EXPECT_LE(s.events(0).time_unix_nano(), s.events(1).time_unix_nano());
  EXPECT_GE(s.events(0).time_unix_nano(), s.start_time_unix_nano());

  EXPECT_EQ(s.status().code(), otlp_trace::Status::STATUS_CODE_ERROR);
  EXPECT_EQ(s.status().message(), "RESOURCE_EXHAUSTED: out of memory");

  // What goes on the wire parses back the same (field numbers are the generated code's).
  std::string wire;
  ASSERT_TRUE(req.SerializeToString(&wire));
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest back;
  ASSERT_TRUE(back.ParseFromString(wire));
  EXPECT_EQ(back.resource_spans(0).scope_spans(0).spans(0).events(1).name(), "step");
}

TEST(Span, ChildSharesTheTraceAndPointsAtItsParent) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer tracer("svc", exporter, 1.0);
  Span root = tracer.StartSpan("root");
  Span child = tracer.StartSpan("child", root.context());
  EXPECT_EQ(child.context().trace_id, root.context().trace_id);
  EXPECT_NE(child.context().span_id, root.context().span_id);
  child.End();
  root.End();
  auto spans = exporter->Take();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0]->name, "child");
  EXPECT_EQ(spans[0]->parent_span_id, root.context().span_id);
  EXPECT_FALSE(spans[0]->parent_remote);
  EXPECT_FALSE(spans[1]->has_parent());

  const auto req = ToOtlpRequest(spans);
  const auto& s = req.resource_spans(0).scope_spans(0).spans(0);
  EXPECT_EQ(s.parent_span_id(), Bytes(root.context().span_id.data(), 8));
  EXPECT_EQ(s.flags() & otlp_trace::SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK,
            static_cast<std::uint32_t>(otlp_trace::SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK));
  EXPECT_EQ(s.flags() & otlp_trace::SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK, 0u);
}

TEST(Span, RemoteParentKeepsTracestateAndIsMarkedRemote) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer tracer("svc", exporter, 1.0);
  auto parent = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=abc");
  ASSERT_TRUE(parent.ok());
  Span span = tracer.StartSpan("handle", *parent, SpanKind::kServer);
  EXPECT_EQ(span.context().trace_state, "vendor=abc");
  EXPECT_EQ(span.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_FALSE(span.context().remote);
  span.End();
  auto spans = exporter->Take();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_TRUE(spans[0]->parent_remote);
  const auto req = ToOtlpRequest(spans);
  const auto& s = req.resource_spans(0).scope_spans(0).spans(0);
  EXPECT_EQ(s.trace_state(), "vendor=abc");
  EXPECT_NE(s.flags() & otlp_trace::SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK, 0u);
}

TEST(Span, SpansOfTwoServicesGoToTwoResources) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer a("svc-a", exporter, 1.0);
  Tracer b("svc-b", exporter, 1.0);
  a.StartSpan("x").End();
  b.StartSpan("y").End();
  a.StartSpan("z").End();
  const auto req = ToOtlpRequest(exporter->Take());
  ASSERT_EQ(req.resource_spans_size(), 2);
  EXPECT_EQ(FindAttr(req.resource_spans(0).resource().attributes(), "service.name")->string_value(), "svc-a");
  EXPECT_EQ(req.resource_spans(0).scope_spans(0).spans_size(), 2);
  EXPECT_EQ(FindAttr(req.resource_spans(1).resource().attributes(), "service.name")->string_value(), "svc-b");
}

TEST(Span, DisabledTracerIsANoOpThatPassesTheContextThrough) {
  const Tracer& off = Tracer::Disabled();
  EXPECT_FALSE(off.enabled());
  Span root = off.StartSpan("root");
  EXPECT_FALSE(root.recording());
  EXPECT_FALSE(root.context().valid());
  EXPECT_EQ(root.traceparent(), "");
  root.SetAttribute("k", "v");
  root.AddEvent("step", {{"step", 1}});
  root.SetError("x");
  root.End();

  auto parent = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(parent.ok());
  Span child = off.StartSpan("child", *parent);
  EXPECT_FALSE(child.recording());
  EXPECT_EQ(child.traceparent(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
}

TEST(Span, UnsampledSpanHasIdsButIsNotExported) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer tracer("svc", exporter, 0.0);
  Span span = tracer.StartSpan("root");
  EXPECT_FALSE(span.recording());
  EXPECT_TRUE(span.context().valid());
  EXPECT_FALSE(span.context().sampled());
  EXPECT_EQ(span.traceparent().substr(53), "00");
  Span child = tracer.StartSpan("child", span.context());
  EXPECT_EQ(child.context().trace_id, span.context().trace_id);
  span.AddEvent("step");
  span.End();
  child.End();
  EXPECT_EQ(exporter->size(), 0u);
}

TEST(Span, TracerSamplingFollowsTheTraceIdAndTheParent) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer half("svc", exporter, 0.5);
  Tracer all("svc", exporter, 1.0);
  int recorded = 0;
  for (int i = 0; i < 400; ++i) {
    Span root = half.StartSpan("root");
    EXPECT_EQ(root.recording(), ShouldSample(root.context().trace_id, 0.5));
    EXPECT_EQ(root.context().sampled(), root.recording());
    recorded += root.recording();
    // Another service with the same ratio decides the same for the same trace.
    Span remote_child = half.StartSpan("child", root.context());
    EXPECT_EQ(remote_child.recording(), root.recording());
    // A ratio of 1 still respects a parent that was not sampled.
    Span all_child = all.StartSpan("child", root.context());
    EXPECT_EQ(all_child.recording(), root.recording());
  }
  EXPECT_GT(recorded, 100);
  EXPECT_LT(recorded, 300);
  // A sampled parent does not lift a service above its own ratio.
  Tracer none("svc", exporter, 0.0);
  Span sampled_root = all.StartSpan("root");
  EXPECT_FALSE(none.StartSpan("child", sampled_root.context()).recording());
}

TEST(Span, EndIsIdempotentAndMoveAssignmentEndsTheOldSpan) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer tracer("svc", exporter, 1.0);
  Span a = tracer.StartSpan("a");
  a.End();
  a.End();
  a.AddEvent("after end");  // ignored
  EXPECT_EQ(exporter->size(), 1u);
  Span b = tracer.StartSpan("b");
  b = tracer.StartSpan("c");  // b ends here
  EXPECT_EQ(exporter->size(), 2u);
  Span moved = std::move(b);
  EXPECT_FALSE(b.recording());  // NOLINT: testing the moved-from state
  moved.End();
  auto spans = exporter->Take();
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[1]->name, "b");
  EXPECT_EQ(spans[2]->name, "c");
  EXPECT_TRUE(spans[2]->events.empty());
}

TEST(Span, LimitsCountWhatTheyDrop) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer tracer("svc", exporter, 1.0);
  Span span = tracer.StartSpan("many");
  for (std::size_t i = 0; i < kMaxEventsPerSpan + 5; ++i) span.AddEvent("step", {{"step", i}});
  for (std::size_t i = 0; i < kMaxAttributesPerSpan + 3; ++i) span.SetAttribute("k" + std::to_string(i), i);
  span.SetAttribute("k0", "replaced");  // same key: replaced, not added
  span.End();
  auto spans = exporter->Take();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0]->events.size(), kMaxEventsPerSpan);
  EXPECT_EQ(spans[0]->dropped_events, 5u);
  EXPECT_EQ(spans[0]->attributes.size(), kMaxAttributesPerSpan);
  EXPECT_EQ(spans[0]->dropped_attributes, 3u);
  EXPECT_EQ(std::get<std::string>(spans[0]->attributes[0].value), "replaced");
  const auto req = ToOtlpRequest(spans);
  EXPECT_EQ(req.resource_spans(0).scope_spans(0).spans(0).dropped_events_count(), 5u);
}

TEST(Span, StartCanBeBackdated) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer tracer("svc", exporter, 1.0);
  const std::uint64_t enqueued = NowUnixNano() - 2'000'000'000ull;  // two seconds ago
  Span root = tracer.StartSpan("root");
  tracer.StartSpan("scheduler.queue", root.context(), SpanKind::kInternal, enqueued).End();
  auto spans = exporter->Take();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0]->start_unix_nano, enqueued);
  EXPECT_GE(spans[0]->end_unix_nano - spans[0]->start_unix_nano, 2'000'000'000ull);
}

TEST(Span, OkStatusIsFinalAndUnsetIsIgnored) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer tracer("svc", exporter, 1.0);
  Span span = tracer.StartSpan("s");
  span.SetStatus(SpanStatus::kOk, "ignored message");
  span.SetError("too late");
  span.End();
  auto spans = exporter->Take();
  EXPECT_EQ(spans[0]->status, SpanStatus::kOk);
  EXPECT_EQ(spans[0]->status_message, "");
}

TEST(Span, EventsFromSeveralThreadsAreAllKept) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer tracer("svc", exporter, 1.0);
  Span span = tracer.StartSpan("shared");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&span, t] {
      for (int i = 0; i < 250; ++i) span.AddEvent("step", {{"thread", t}, {"i", i}});
    });
  }
  for (auto& th : threads) th.join();
  span.End();
  auto spans = exporter->Take();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0]->events.size(), 1000u);
}

}  // namespace
}  // namespace unmask::telemetry
