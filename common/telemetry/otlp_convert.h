// SpanData -> OTLP (opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest).
#pragma once

#include <memory>
#include <vector>

#include "common/telemetry/span_data.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"

namespace unmask::telemetry {

// Scope name and version the spans are reported under.
inline constexpr char kInstrumentationScope[] = "unmask";
inline constexpr char kInstrumentationVersion[] = "0.1.0";

// One ResourceSpans per service name (resource attribute service.name), in first-seen order,
// each with one ScopeSpans ("unmask"). Ids are written as raw bytes (16 and 8), flags carry the
// W3C trace flags plus the OTLP "has is_remote" / "is_remote" bits for the parent.
opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest ToOtlpRequest(
    const std::vector<std::unique_ptr<SpanData>>& spans);

}  // namespace unmask::telemetry
