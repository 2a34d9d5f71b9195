#include "common/telemetry/block_spans.h"

namespace unmask::telemetry {

BlockSpans::BlockSpans(const Tracer& tracer, const Span& parent, std::string_view name) {
  if (!parent.recording()) return;
  tracer_ = &tracer;
  parent_ = parent.context();
  name_ = std::string(name);
  last_step_ns_ = NowUnixNano();
}

void BlockSpans::StepSlow(std::int64_t block, std::int64_t step, std::int64_t unmasked) {
  const std::uint64_t now = NowUnixNano();
  if (block != block_ || !current_.recording()) {
    if (current_.recording()) Close(SpanStatus::kOk, {}, last_step_ns_);
    current_ = tracer_->StartSpan(name_, parent_, SpanKind::kInternal, last_step_ns_);
    block_ = block;
    first_step_ = step;
    steps_ = 0;
    unmasked_ = 0;
    ++blocks_started_;
  }
  last_step_ = step;
  ++steps_;
  unmasked_ += unmasked;
  last_step_ns_ = now;
}

void BlockSpans::Close(SpanStatus status, std::string_view message, std::uint64_t end_unix_nano) {
  current_.SetAttribute("block", block_);
  current_.SetAttribute("first_step", first_step_);
  current_.SetAttribute("last_step", last_step_);
  current_.SetAttribute("steps", steps_);
  current_.SetAttribute("unmasked", unmasked_);
  current_.SetStatus(status, message);
  if (end_unix_nano != 0) {
    current_.EndAt(end_unix_nano);
  } else {
    current_.End();
  }
}

}  // namespace unmask::telemetry
