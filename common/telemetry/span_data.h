// What a finished span holds on its way to the exporter, and the exporter interface itself.
// Kept apart from span.h so that exporters do not depend on the Span API.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/telemetry/trace_context.h"

namespace unmask::telemetry {

// Same numbers as opentelemetry.proto.trace.v1.Span.SpanKind.
enum class SpanKind : int { kInternal = 1, kServer = 2, kClient = 3, kProducer = 4, kConsumer = 5 };
// Same numbers as opentelemetry.proto.trace.v1.Status.StatusCode.
enum class SpanStatus : int { kUnset = 0, kOk = 1, kError = 2 };

// An attribute value at the call site: a view, never an owner, so that building one costs nothing
// when the span is not recording. Strings are copied only when a recording span keeps them.
class AttrValue {
 public:
  enum class Type : std::uint8_t { kString, kInt, kDouble, kBool };
  AttrValue(std::string_view s) : type_(Type::kString), s_(s) {}              // NOLINT: implicit
  AttrValue(const char* s) : type_(Type::kString), s_(s) {}                    // NOLINT
  AttrValue(const std::string& s) : type_(Type::kString), s_(s) {}             // NOLINT
  AttrValue(bool b) : type_(Type::kBool) { u_.b = b; }                         // NOLINT
  AttrValue(double d) : type_(Type::kDouble) { u_.d = d; }                     // NOLINT
  AttrValue(float d) : type_(Type::kDouble) { u_.d = d; }                      // NOLINT
  AttrValue(int i) : type_(Type::kInt) { u_.i = i; }                           // NOLINT
  AttrValue(long i) : type_(Type::kInt) { u_.i = i; }                          // NOLINT
  AttrValue(long long i) : type_(Type::kInt) { u_.i = i; }                     // NOLINT
  AttrValue(unsigned i) : type_(Type::kInt) { u_.i = i; }                      // NOLINT
  AttrValue(unsigned long i) : type_(Type::kInt) { u_.i = static_cast<std::int64_t>(i); }       // NOLINT
  AttrValue(unsigned long long i) : type_(Type::kInt) { u_.i = static_cast<std::int64_t>(i); }  // NOLINT

  Type type() const { return type_; }
  std::string_view str() const { return s_; }
  std::int64_t i() const { return u_.i; }
  double d() const { return u_.d; }
  bool b() const { return u_.b; }

 private:
  Type type_;
  union {
    std::int64_t i;
    double d;
    bool b;
  } u_{};
  std::string_view s_;
};

// A key and a value at the call site (both views).
struct Attr {
  std::string_view key;
  AttrValue value;
};

// An owned attribute, as stored in SpanData.
struct Attribute {
  std::string key;
  std::variant<std::string, std::int64_t, double, bool> value;
  static Attribute From(const Attr& a);
  // Sets key and value in place (no temporary: this is the step-event hot path).
  void Assign(const Attr& a);
};

// One event. Its attributes live in SpanData::event_attributes[attr_begin, attr_begin +
// attr_count): one pool per span, so that recording an event allocates nothing (amortized).
struct SpanEvent {
  std::uint64_t time_unix_nano = 0;
  std::string name;
  std::uint32_t attr_begin = 0;
  std::uint32_t attr_count = 0;
};

// Limits per span; what goes past them is counted in the dropped_* fields, never stored.
inline constexpr std::size_t kMaxAttributesPerSpan = 128;
inline constexpr std::size_t kMaxEventsPerSpan = 4096;
inline constexpr std::size_t kMaxAttributesPerEvent = 32;

struct SpanData {
  std::shared_ptr<const std::string> service_name;  // the resource the span belongs to
  SpanContext context;                              // this span's ids, flags and tracestate
  SpanId parent_span_id{};                          // all zero for a root
  bool parent_remote = false;                       // the parent came from another process
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  std::uint64_t start_unix_nano = 0;
  std::uint64_t end_unix_nano = 0;
  std::vector<Attribute> attributes;
  std::uint32_t dropped_attributes = 0;
  std::vector<SpanEvent> events;
  std::vector<Attribute> event_attributes;  // the pool SpanEvent::attr_begin/attr_count index
  std::uint32_t dropped_events = 0;
  SpanStatus status = SpanStatus::kUnset;
  std::string status_message;

  bool has_parent() const;
  // The attributes of events[i].
  const Attribute* event_attributes_begin(const SpanEvent& e) const { return event_attributes.data() + e.attr_begin; }
  const Attribute* event_attributes_end(const SpanEvent& e) const {
    return event_attributes.data() + e.attr_begin + e.attr_count;
  }
  // Roughly the memory this span holds (what the exporter's queue bound counts).
  std::size_t ApproxBytes() const;
};

// Receives finished, sampled spans. Export must never block for long: it is called from request
// threads when a span ends.
class SpanExporter {
 public:
  virtual ~SpanExporter() = default;
  virtual void Export(std::unique_ptr<SpanData> span) = 0;
};

// Nanoseconds since the Unix epoch (system clock).
std::uint64_t NowUnixNano();

}  // namespace unmask::telemetry
