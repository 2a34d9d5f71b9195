#include "common/telemetry/otlp_convert.h"

#include <string>
#include <unordered_map>

namespace unmask::telemetry {
namespace {

namespace otlp_common = opentelemetry::proto::common::v1;
namespace otlp_trace = opentelemetry::proto::trace::v1;

void SetAttribute(const Attribute& a, otlp_common::KeyValue* kv) {
  kv->set_key(a.key);
  auto* v = kv->mutable_value();
  if (const auto* s = std::get_if<std::string>(&a.value)) {
    v->set_string_value(*s);
  } else if (const auto* i = std::get_if<std::int64_t>(&a.value)) {
    v->set_int_value(*i);
  } else if (const auto* d = std::get_if<double>(&a.value)) {
    v->set_double_value(*d);
  } else if (const auto* b = std::get_if<bool>(&a.value)) {
    v->set_bool_value(*b);
  }
}

void SetString(const char* key, const std::string& value, otlp_common::KeyValue* kv) {
  kv->set_key(key);
  kv->mutable_value()->set_string_value(value);
}

void ToOtlpSpan(const SpanData& s, otlp_trace::Span* out) {
  out->set_trace_id(s.context.trace_id.data(), s.context.trace_id.size());
  out->set_span_id(s.context.span_id.data(), s.context.span_id.size());
  out->set_trace_state(s.context.trace_state);
  std::uint32_t flags = s.context.flags;
  if (s.has_parent()) {
    out->set_parent_span_id(s.parent_span_id.data(), s.parent_span_id.size());
    flags |= otlp_trace::SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK;
    if (s.parent_remote) flags |= otlp_trace::SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK;
  }
  out->set_flags(flags);
  out->set_name(s.name);
  out->set_kind(static_cast<otlp_trace::Span::SpanKind>(static_cast<int>(s.kind)));
  out->set_start_time_unix_nano(s.start_unix_nano);
  out->set_end_time_unix_nano(s.end_unix_nano);
  for (const auto& a : s.attributes) SetAttribute(a, out->add_attributes());
  out->set_dropped_attributes_count(s.dropped_attributes);
  for (const auto& e : s.events) {
    auto* ev = out->add_events();
    ev->set_time_unix_nano(e.time_unix_nano);
    ev->set_name(e.name);
    for (const Attribute* a = s.event_attributes_begin(e); a != s.event_attributes_end(e); ++a) {
      SetAttribute(*a, ev->add_attributes());
    }
  }
  out->set_dropped_events_count(s.dropped_events);
  if (s.status != SpanStatus::kUnset) {
    auto* st = out->mutable_status();
    st->set_code(static_cast<otlp_trace::Status::StatusCode>(static_cast<int>(s.status)));
    st->set_message(s.status_message);
  }
}

}  // namespace

opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest ToOtlpRequest(
    const std::vector<std::unique_ptr<SpanData>>& spans) {
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest req;
  std::unordered_map<std::string, otlp_trace::ScopeSpans*> by_service;
  for (const auto& span : spans) {
    if (!span) continue;
    const std::string service = span->service_name ? *span->service_name : std::string("unknown_service");
    auto it = by_service.find(service);
    if (it == by_service.end()) {
      auto* rs = req.add_resource_spans();
      auto* res = rs->mutable_resource();
      SetString("service.name", service, res->add_attributes());
      SetString("telemetry.sdk.name", kInstrumentationScope, res->add_attributes());
      SetString("telemetry.sdk.language", "cpp", res->add_attributes());
      SetString("telemetry.sdk.version", kInstrumentationVersion, res->add_attributes());
      auto* ss = rs->add_scope_spans();
      ss->mutable_scope()->set_name(kInstrumentationScope);
      ss->mutable_scope()->set_version(kInstrumentationVersion);
      it = by_service.emplace(service, ss).first;
    }
    ToOtlpSpan(*span, it->second->add_spans());
  }
  return req;
}

}  // namespace unmask::telemetry
