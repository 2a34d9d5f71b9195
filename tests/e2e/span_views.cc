#include "tests/e2e/span_views.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace unmask::testing {
namespace {

using OtlpSpan = opentelemetry::proto::trace::v1::Span;

std::string AnyText(const opentelemetry::proto::common::v1::AnyValue& v) {
  switch (v.value_case()) {
    case opentelemetry::proto::common::v1::AnyValue::kStringValue: return v.string_value();
    case opentelemetry::proto::common::v1::AnyValue::kIntValue: return std::to_string(v.int_value());
    case opentelemetry::proto::common::v1::AnyValue::kBoolValue: return v.bool_value() ? "true" : "false";
    case opentelemetry::proto::common::v1::AnyValue::kDoubleValue: return std::to_string(v.double_value());
    default: return "?";
  }
}

}  // namespace

std::string Hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

SpanView View(const telemetry::testing::ReceivedSpan& r) {
  const OtlpSpan& s = r.span;
  SpanView v;
  v.service = r.service;
  v.name = s.name();
  v.trace_id = Hex(s.trace_id());
  v.span_id = Hex(s.span_id());
  v.parent_span_id = Hex(s.parent_span_id());
  v.kind = s.kind();
  v.status = s.status().code();
  v.start = s.start_time_unix_nano();
  v.end = s.end_time_unix_nano();
  for (const auto& kv : s.attributes()) v.attributes[kv.key()] = AnyText(kv.value());
  for (const auto& e : s.events()) {
    std::map<std::string, std::string> attrs;
    for (const auto& kv : e.attributes()) attrs[kv.key()] = AnyText(kv.value());
    v.events.emplace_back(e.name(), std::move(attrs));
  }
  return v;
}

std::vector<SpanView> Views(const telemetry::testing::TestCollector& c) {
  std::vector<SpanView> out;
  for (const auto& r : c.spans()) out.push_back(View(r));
  return out;
}

std::vector<SpanView> Find(const std::vector<SpanView>& spans, const std::string& service, const std::string& name,
                           const std::string& key, const std::string& value) {
  std::vector<SpanView> out;
  for (const auto& s : spans) {
    if (s.service != service || s.name != name) continue;
    if (!key.empty()) {
      auto it = s.attributes.find(key);
      if (it == s.attributes.end() || it->second != value) continue;
    }
    out.push_back(s);
  }
  return out;
}

std::vector<SpanView> Children(const std::vector<SpanView>& spans, const SpanView& parent, const std::string& name) {
  std::vector<SpanView> out;
  for (const auto& s : spans) {
    if (s.trace_id == parent.trace_id && s.parent_span_id == parent.span_id && s.name == name) out.push_back(s);
  }
  std::sort(out.begin(), out.end(), [](const SpanView& a, const SpanView& b) { return a.start < b.start; });
  return out;
}

std::vector<SpanView> WaitForSpans(telemetry::testing::TestCollector& c,
                                   const std::function<bool(const std::vector<SpanView>&)>& ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpanDeadline;
  while (true) {
    const std::size_t seen = c.span_count();
    auto spans = Views(c);
    if (ready(spans) || std::chrono::steady_clock::now() >= deadline) return spans;
    c.WaitForSpans(seen + 1, std::chrono::milliseconds(250));
  }
}

std::string Describe(const std::vector<SpanView>& spans) {
  std::ostringstream out;
  for (const auto& s : spans) {
    out << s.service << " " << s.name << " trace=" << s.trace_id << " span=" << s.span_id << " parent=" << s.parent_span_id;
    if (std::getenv("UNMASK_TEST_DUMP_SPANS") != nullptr) {
      for (const auto& [k, v] : s.attributes) out << " " << k << "=" << v;
      out << " events=" << s.events.size();
    }
    out << "\n";
  }
  return out.str();
}

void MaybeDump(const std::vector<SpanView>& spans) {
  if (std::getenv("UNMASK_TEST_DUMP_SPANS") != nullptr) std::cerr << Describe(spans);
}

}  // namespace unmask::testing
