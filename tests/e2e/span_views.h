// The spans an in-test OTLP collector received, in the form the e2e assertions read: ids in hex,
// attribute values as text, plus lookups, a wait and a dump.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/telemetry/test_collector.h"

namespace unmask::testing {

inline constexpr auto kSpanDeadline = std::chrono::seconds(30);

struct SpanView {
  std::string service, name, trace_id, span_id, parent_span_id;  // ids in hex; parent "" for a root
  int kind = 0;    // 1 internal, 2 server, 3 client
  int status = 0;  // 0 unset, 1 ok, 2 error
  std::uint64_t start = 0, end = 0;
  std::map<std::string, std::string> attributes;  // every value as text
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> events;
};

std::string Hex(const std::string& bytes);
SpanView View(const telemetry::testing::ReceivedSpan& received);
std::vector<SpanView> Views(const telemetry::testing::TestCollector& collector);

// The spans of `service` named `name` (and, when given, with attribute key=value).
std::vector<SpanView> Find(const std::vector<SpanView>& spans, const std::string& service, const std::string& name,
                           const std::string& key = "", const std::string& value = "");
// The spans whose parent is `parent`, named `name`, in start order.
std::vector<SpanView> Children(const std::vector<SpanView>& spans, const SpanView& parent, const std::string& name);

// Waits (polling the collector, which wakes on every export) until `ready` holds or
// kSpanDeadline passes; returns the spans seen last.
std::vector<SpanView> WaitForSpans(telemetry::testing::TestCollector& collector,
                                   const std::function<bool(const std::vector<SpanView>&)>& ready);

// One line per span; with UNMASK_TEST_DUMP_SPANS set, with attributes and event counts.
std::string Describe(const std::vector<SpanView>& spans);
// UNMASK_TEST_DUMP_SPANS=1: print every span received (to see what a trace looks like).
void MaybeDump(const std::vector<SpanView>& spans);

}  // namespace unmask::testing
