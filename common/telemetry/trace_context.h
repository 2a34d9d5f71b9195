// W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` header that ties
// the spans of one request together across the scheduler, the executors and the loader, the
// `tracestate` header carried along unchanged, id generation and the sampling decision.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/util/status.h"

namespace unmask::telemetry {

using TraceId = std::array<std::uint8_t, 16>;
using SpanId = std::array<std::uint8_t, 8>;

inline constexpr std::uint8_t kTraceFlagSampled = 0x01;

// The identity of one span as it travels between processes.
struct SpanContext {
  TraceId trace_id{};
  SpanId span_id{};
  std::uint8_t flags = 0;   // W3C trace-flags; bit 0 = sampled
  std::string trace_state;  // the `tracestate` header, carried as-is (may be empty)
  bool remote = false;      // true when parsed from a peer rather than created here

  // Both ids non-zero. An invalid context means "no parent".
  bool valid() const;
  bool sampled() const { return (flags & kTraceFlagSampled) != 0; }
  // 32 / 16 lower-case hex digits (empty strings when the context is not valid), for logs.
  std::string trace_id_hex() const;
  std::string span_id_hex() const;
};

bool operator==(const SpanContext& a, const SpanContext& b);
inline bool operator!=(const SpanContext& a, const SpanContext& b) { return !(a == b); }

// Parses a `traceparent` value: "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>".
// Accepts upper-case hex and a future version (anything but "ff") with extra "-..." fields, as the
// specification asks; rejects all-zero ids, version "ff", wrong lengths, non-hex characters and a
// version 00 value with trailing data. The error says which part is wrong. `tracestate` is
// copied into the result unchanged; remote is set.
StatusOr<SpanContext> ParseTraceparent(std::string_view traceparent, std::string_view tracestate = {});
// "00-<trace id>-<span id>-<flags>", lower-case. Empty when the context is not valid.
std::string FormatTraceparent(const SpanContext& context);

// Lower-case hex of bytes; parsing returns false on wrong length, non-hex or all-zero input.
std::string ToHex(const std::uint8_t* data, std::size_t size);
bool ParseTraceId(std::string_view hex, TraceId* out);
bool ParseSpanId(std::string_view hex, SpanId* out);

// Random, never all-zero ids from a per-thread generator seeded from std::random_device.
TraceId NewTraceId();
SpanId NewSpanId();

// The trace-id-ratio sampling decision: true when the low 8 bytes of the trace id, read as a
// big-endian 64-bit number, fall below ratio * 2^64 (0 never samples, 1 always does). It depends
// only on the trace id and the ratio, so services configured alike agree on every trace, and the
// traces sampled at ratio r are a subset of those sampled at any larger ratio.
bool ShouldSample(const TraceId& trace_id, double ratio);

}  // namespace unmask::telemetry
