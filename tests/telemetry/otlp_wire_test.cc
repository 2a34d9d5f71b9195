// The OTLP messages are the project's own proto files; both ends of every other test use the
// same generated code, so a wrong field number would go unnoticed there. This test pins the wire
// encoding of each field to the number and type the OTLP specification gives it (tag byte =
// field_number << 3 | wire_type), which is what Jaeger's receiver decodes.
#include <gtest/gtest.h>

#include <string>

#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"

namespace unmask::telemetry {
namespace {

namespace collector = opentelemetry::proto::collector::trace::v1;
namespace trace = opentelemetry::proto::trace::v1;
namespace common = opentelemetry::proto::common::v1;
namespace resource = opentelemetry::proto::resource::v1;

template <typename M>
std::string Wire(const M& m) {
  std::string out;
  EXPECT_TRUE(m.SerializeToString(&out));
  return out;
}

std::string B(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s += static_cast<char>(b);
  return s;
}

TEST(OtlpWire, SpanFieldsHaveTheSpecNumbersAndTypes) {
  trace::Span s;
  s.set_trace_id(std::string(16, '\x11'));
  EXPECT_EQ(Wire(s), B({0x0a, 16}) + std::string(16, '\x11'));  // 1: bytes
  s.Clear();
  s.set_span_id(std::string(8, '\x22'));
  EXPECT_EQ(Wire(s), B({0x12, 8}) + std::string(8, '\x22'));  // 2: bytes
  s.Clear();
  s.set_trace_state("a");
  EXPECT_EQ(Wire(s), B({0x1a, 1, 'a'}));  // 3: string
  s.Clear();
  s.set_parent_span_id(std::string(8, '\x33'));
  EXPECT_EQ(Wire(s), B({0x22, 8}) + std::string(8, '\x33'));  // 4: bytes
  s.Clear();
  s.set_name("n");
  EXPECT_EQ(Wire(s), B({0x2a, 1, 'n'}));  // 5: string
  s.Clear();
  s.set_kind(trace::Span::SPAN_KIND_SERVER);
  EXPECT_EQ(Wire(s), B({0x30, 2}));  // 6: enum, SERVER = 2
  s.Clear();
  s.set_start_time_unix_nano(1);
  EXPECT_EQ(Wire(s), B({0x39, 1, 0, 0, 0, 0, 0, 0, 0}));  // 7: fixed64
  s.Clear();
  s.set_end_time_unix_nano(2);
  EXPECT_EQ(Wire(s), B({0x41, 2, 0, 0, 0, 0, 0, 0, 0}));  // 8: fixed64
  s.Clear();
  s.add_attributes();
  EXPECT_EQ(Wire(s), B({0x4a, 0}));  // 9: KeyValue
  s.Clear();
  s.set_dropped_attributes_count(3);
  EXPECT_EQ(Wire(s), B({0x50, 3}));  // 10: uint32
  s.Clear();
  s.add_events();
  EXPECT_EQ(Wire(s), B({0x5a, 0}));  // 11: Event
  s.Clear();
  s.set_dropped_events_count(4);
  EXPECT_EQ(Wire(s), B({0x60, 4}));  // 12: uint32
  s.Clear();
  s.add_links();
  EXPECT_EQ(Wire(s), B({0x6a, 0}));  // 13: Link
  s.Clear();
  s.set_dropped_links_count(5);
  EXPECT_EQ(Wire(s), B({0x70, 5}));  // 14: uint32
  s.Clear();
  s.mutable_status();
  EXPECT_EQ(Wire(s), B({0x7a, 0}));  // 15: Status
  s.Clear();
  s.set_flags(0x301);
  EXPECT_EQ(Wire(s), B({0x85, 0x01, 0x01, 0x03, 0, 0}));  // 16: fixed32 (two-byte tag)
}

TEST(OtlpWire, StatusEventLinkFields) {
  trace::Status st;
  st.set_message("m");
  st.set_code(trace::Status::STATUS_CODE_ERROR);
  EXPECT_EQ(Wire(st), B({0x12, 1, 'm', 0x18, 2}));  // 2: message, 3: code (1 is reserved)

  trace::Span::Event ev;
  ev.set_time_unix_nano(7);
  ev.set_name("e");
  ev.add_attributes();
  ev.set_dropped_attributes_count(1);
  EXPECT_EQ(Wire(ev), B({0x09, 7, 0, 0, 0, 0, 0, 0, 0, 0x12, 1, 'e', 0x1a, 0, 0x20, 1}));

  trace::Span::Link link;
  link.set_trace_id("t");
  link.set_span_id("s");
  link.set_trace_state("x");
  link.add_attributes();
  link.set_dropped_attributes_count(1);
  link.set_flags(1);
  EXPECT_EQ(Wire(link), B({0x0a, 1, 't', 0x12, 1, 's', 0x1a, 1, 'x', 0x22, 0, 0x28, 1, 0x35, 1, 0, 0, 0}));
}

TEST(OtlpWire, CommonAndResourceFields) {
  common::AnyValue v;
  v.set_string_value("s");
  EXPECT_EQ(Wire(v), B({0x0a, 1, 's'}));
  v.set_bool_value(true);
  EXPECT_EQ(Wire(v), B({0x10, 1}));
  v.set_int_value(5);
  EXPECT_EQ(Wire(v), B({0x18, 5}));
  v.set_double_value(1.0);
  EXPECT_EQ(Wire(v), B({0x21, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}));
  v.set_bytes_value("b");
  EXPECT_EQ(Wire(v), B({0x3a, 1, 'b'}));
  v.mutable_array_value();
  EXPECT_EQ(Wire(v), B({0x2a, 0}));
  v.mutable_kvlist_value();
  EXPECT_EQ(Wire(v), B({0x32, 0}));

  common::KeyValue kv;
  kv.set_key("k");
  kv.mutable_value()->set_int_value(1);
  EXPECT_EQ(Wire(kv), B({0x0a, 1, 'k', 0x12, 2, 0x18, 1}));

  common::InstrumentationScope scope;
  scope.set_name("n");
  scope.set_version("v");
  scope.add_attributes();
  scope.set_dropped_attributes_count(2);
  EXPECT_EQ(Wire(scope), B({0x0a, 1, 'n', 0x12, 1, 'v', 0x1a, 0, 0x20, 2}));

  resource::Resource r;
  r.add_attributes();
  r.set_dropped_attributes_count(1);
  EXPECT_EQ(Wire(r), B({0x0a, 0, 0x10, 1}));
}

TEST(OtlpWire, EnvelopeAndServiceNames) {
  collector::ExportTraceServiceRequest req;
  auto* rs = req.add_resource_spans();
  rs->mutable_resource();
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope();
  ss->add_spans();
  ss->set_schema_url("u");
  rs->set_schema_url("w");
  // request{1: ResourceSpans{1: Resource{}, 2: ScopeSpans{1: scope{}, 2: Span{}, 3: "u"}, 3: "w"}}
  EXPECT_EQ(Wire(req), B({0x0a, 14, 0x0a, 0, 0x12, 7, 0x0a, 0, 0x12, 0, 0x1a, 1, 'u', 0x1a, 1, 'w'}));

  collector::ExportTraceServiceResponse resp;
  resp.mutable_partial_success()->set_rejected_spans(2);
  resp.mutable_partial_success()->set_error_message("e");
  EXPECT_EQ(Wire(resp), B({0x0a, 5, 0x08, 2, 0x12, 1, 'e'}));

  trace::TracesData data;
  data.add_resource_spans();
  EXPECT_EQ(Wire(data), B({0x0a, 0}));

  // The gRPC method receivers route on.
  const auto* service = collector::TraceService::service_full_name();
  EXPECT_STREQ(service, "opentelemetry.proto.collector.trace.v1.TraceService");
  const auto* desc = collector::ExportTraceServiceRequest::descriptor()->file()->FindServiceByName("TraceService");
  ASSERT_NE(desc, nullptr);
  ASSERT_NE(desc->FindMethodByName("Export"), nullptr);
  EXPECT_EQ(desc->FindMethodByName("Export")->input_type()->full_name(),
            "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest");
  EXPECT_EQ(trace::Span::descriptor()->full_name(), "opentelemetry.proto.trace.v1.Span");
  EXPECT_EQ(trace::SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK, 0x200);
}

}  // namespace
}  // namespace unmask::telemetry
