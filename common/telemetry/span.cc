#include "common/telemetry/span.h"

#include <algorithm>
#include <chrono>

namespace unmask::telemetry {

std::uint64_t NowUnixNano() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

Attribute Attribute::From(const Attr& a) {
  Attribute out;
  out.Assign(a);
  return out;
}

void Attribute::Assign(const Attr& a) {
  key.assign(a.key.data(), a.key.size());
  switch (a.value.type()) {
    case AttrValue::Type::kString: value.emplace<std::string>(a.value.str().data(), a.value.str().size()); break;
    case AttrValue::Type::kInt: value.emplace<std::int64_t>(a.value.i()); break;
    case AttrValue::Type::kDouble: value.emplace<double>(a.value.d()); break;
    case AttrValue::Type::kBool: value.emplace<bool>(a.value.b()); break;
  }
}

std::size_t SpanData::ApproxBytes() const {
  auto attr_bytes = [](const Attribute& a) {
    std::size_t n = sizeof(Attribute) + a.key.capacity();
    if (const auto* s = std::get_if<std::string>(&a.value)) n += s->capacity();
    return n;
  };
  std::size_t n = sizeof(SpanData) + name.capacity() + status_message.capacity() + context.trace_state.capacity();
  for (const auto& a : attributes) n += attr_bytes(a);
  n += events.capacity() * sizeof(SpanEvent);
  for (const auto& e : events) n += e.name.capacity() > 15 ? e.name.capacity() : 0;
  n += (event_attributes.capacity() - event_attributes.size()) * sizeof(Attribute);
  for (const auto& a : event_attributes) n += attr_bytes(a);
  return n;
}

bool SpanData::has_parent() const {
  for (auto b : parent_span_id)
    if (b != 0) return true;
  return false;
}

Span::Span(Span&& other) noexcept : context_(std::move(other.context_)), rec_(std::move(other.rec_)) {}

Span& Span::operator=(Span&& other) noexcept {
  if (this != &other) {
    End();
    context_ = std::move(other.context_);
    rec_ = std::move(other.rec_);
  }
  return *this;
}

void Span::SetAttributeSlow(std::string_view key, const AttrValue& value) {
  std::lock_guard<std::mutex> lock(rec_->mu);
  auto& data = *rec_->data;
  // Keys are unique (OTLP requires it): a second SetAttribute replaces the value.
  for (auto& a : data.attributes) {
    if (a.key == key) {
      a.Assign({key, value});
      return;
    }
  }
  if (data.attributes.size() >= kMaxAttributesPerSpan) {
    ++data.dropped_attributes;
    return;
  }
  data.attributes.emplace_back().Assign({key, value});
}

void Span::AddEventSlow(std::string_view name, std::initializer_list<Attr> attributes) {
  const std::uint64_t now = NowUnixNano();
  std::lock_guard<std::mutex> lock(rec_->mu);
  auto& data = *rec_->data;
  if (data.events.size() >= kMaxEventsPerSpan) {
    ++data.dropped_events;
    return;
  }
  if (data.events.empty()) {
    // A span that gets one event usually gets many (steps): skip the first few regrowths.
    data.events.reserve(32);
    data.event_attributes.reserve(32 * std::max<std::size_t>(attributes.size(), 1));
  }
  SpanEvent& ev = data.events.emplace_back();
  ev.time_unix_nano = now;
  ev.name.assign(name.data(), name.size());
  ev.attr_begin = static_cast<std::uint32_t>(data.event_attributes.size());
  for (const auto& a : attributes) {
    if (ev.attr_count >= kMaxAttributesPerEvent) break;
    data.event_attributes.emplace_back().Assign(a);
    ++ev.attr_count;
  }
}

void Span::SetStatusSlow(SpanStatus status, std::string_view message) {
  std::lock_guard<std::mutex> lock(rec_->mu);
  auto& data = *rec_->data;
  // As the OpenTelemetry API specifies: OK is final, and a message goes with ERROR only.
  if (data.status == SpanStatus::kOk) return;
  if (status == SpanStatus::kUnset) return;
  data.status = status;
  data.status_message = status == SpanStatus::kError ? std::string(message) : std::string();
}

void Span::EndSlow(std::uint64_t end_unix_nano) {
  std::unique_ptr<Recording> rec = std::move(rec_);
  std::unique_ptr<SpanData> data;
  {
    std::lock_guard<std::mutex> lock(rec->mu);
    data = std::move(rec->data);
  }
  const std::uint64_t now = NowUnixNano();
  // Never before the start (a clock step, or an end time given from before it).
  data->end_unix_nano = std::max(data->start_unix_nano, end_unix_nano != 0 ? end_unix_nano : now);
  if (rec->exporter) rec->exporter->Export(std::move(data));
}

}  // namespace unmask::telemetry
