#include "common/telemetry/trace_context.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace unmask::telemetry {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes exactly 2*size hex digits; false on a non-hex character or a wrong length.
bool DecodeHex(std::string_view hex, std::uint8_t* out, std::size_t size) {
  if (hex.size() != 2 * size) return false;
  for (std::size_t i = 0; i < size; ++i) {
    const int hi = HexValue(hex[2 * i]);
    const int lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return true;
}

template <std::size_t N>
bool AllZero(const std::array<std::uint8_t, N>& a) {
  return std::all_of(a.begin(), a.end(), [](std::uint8_t b) { return b == 0; });
}

Status Bad(std::string_view traceparent, const std::string& why) {
  std::string shown(traceparent.substr(0, 80));
  return InvalidArgumentError("traceparent '" + shown + "': " + why);
}

// splitmix64: one 64-bit state per thread, seeded once from the OS.
std::uint64_t NextRandom() {
  thread_local std::uint64_t state = [] {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }();
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void FillRandom(std::uint8_t* out, std::size_t size) {
  for (std::size_t i = 0; i < size; i += 8) {
    std::uint64_t r = NextRandom();
    for (std::size_t j = i; j < std::min(size, i + 8); ++j, r >>= 8) out[j] = static_cast<std::uint8_t>(r);
  }
}

}  // namespace

bool SpanContext::valid() const { return !AllZero(trace_id) && !AllZero(span_id); }

std::string SpanContext::trace_id_hex() const { return valid() ? ToHex(trace_id.data(), trace_id.size()) : ""; }
std::string SpanContext::span_id_hex() const { return valid() ? ToHex(span_id.data(), span_id.size()) : ""; }

bool operator==(const SpanContext& a, const SpanContext& b) {
  return a.trace_id == b.trace_id && a.span_id == b.span_id && a.flags == b.flags && a.trace_state == b.trace_state;
}

std::string ToHex(const std::uint8_t* data, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * size, '0');
  for (std::size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 0xF];
  }
  return out;
}

bool ParseTraceId(std::string_view hex, TraceId* out) {
  TraceId id{};
  if (!DecodeHex(hex, id.data(), id.size()) || AllZero(id)) return false;
  *out = id;
  return true;
}

bool ParseSpanId(std::string_view hex, SpanId* out) {
  SpanId id{};
  if (!DecodeHex(hex, id.data(), id.size()) || AllZero(id)) return false;
  *out = id;
  return true;
}

StatusOr<SpanContext> ParseTraceparent(std::string_view tp, std::string_view tracestate) {
  // version(2) '-' trace-id(32) '-' parent-id(16) '-' flags(2) = 55 characters.
  constexpr std::size_t kLength = 55;
  if (tp.empty()) return Bad(tp, "empty");
  if (tp.size() < kLength) {
    return Bad(tp, "too short (" + std::to_string(tp.size()) + " characters; want 55: 00-<32 hex>-<16 hex>-<2 hex>)");
  }
  std::uint8_t version = 0;
  if (!DecodeHex(tp.substr(0, 2), &version, 1)) return Bad(tp, "version is not 2 hex digits");
  if (version == 0xff) return Bad(tp, "version ff is forbidden");
  if (tp[2] != '-' || tp[35] != '-' || tp[52] != '-') {
    return Bad(tp, "fields must be separated by '-' at offsets 2, 35 and 52");
  }
  if (version == 0 && tp.size() != kLength) return Bad(tp, "version 00 must be exactly 55 characters");
  if (version != 0 && tp.size() > kLength && tp[kLength] != '-') {
    return Bad(tp, "data after the flags must start with '-'");
  }
  SpanContext ctx;
  if (!DecodeHex(tp.substr(3, 32), ctx.trace_id.data(), ctx.trace_id.size())) {
    return Bad(tp, "trace id is not 32 hex digits");
  }
  if (AllZero(ctx.trace_id)) return Bad(tp, "trace id is all zeros");
  if (!DecodeHex(tp.substr(36, 16), ctx.span_id.data(), ctx.span_id.size())) {
    return Bad(tp, "parent span id is not 16 hex digits");
  }
  if (AllZero(ctx.span_id)) return Bad(tp, "parent span id is all zeros");
  if (!DecodeHex(tp.substr(53, 2), &ctx.flags, 1)) return Bad(tp, "flags are not 2 hex digits");
  ctx.trace_state = std::string(tracestate);
  ctx.remote = true;
  return ctx;
}

std::string FormatTraceparent(const SpanContext& c) {
  if (!c.valid()) return "";
  std::string out = "00-";
  out += ToHex(c.trace_id.data(), c.trace_id.size());
  out += '-';
  out += ToHex(c.span_id.data(), c.span_id.size());
  out += '-';
  out += ToHex(&c.flags, 1);
  return out;
}

TraceId NewTraceId() {
  TraceId id{};
  do FillRandom(id.data(), id.size());
  while (AllZero(id));
  return id;
}

SpanId NewSpanId() {
  SpanId id{};
  do FillRandom(id.data(), id.size());
  while (AllZero(id));
  return id;
}

bool ShouldSample(const TraceId& trace_id, double ratio) {
  if (!(ratio > 0.0)) return false;  // also false for NaN
  if (ratio >= 1.0) return true;
  std::uint64_t low = 0;
  for (std::size_t i = 8; i < 16; ++i) low = low << 8 | trace_id[i];
  // ratio * 2^64 < 2^64 here, so the conversion cannot overflow.
  const auto bound = static_cast<std::uint64_t>(std::ldexp(ratio, 64));
  return low < bound;
}

}  // namespace unmask::telemetry
