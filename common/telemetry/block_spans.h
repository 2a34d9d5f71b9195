// BlockSpans: one child span per block of a stepped loop (a semi-autoregressive diffusion
// generation runs its steps block by block), so that a trace shows where the time of a job went.
//
//   BlockSpans blocks(tracer, job_span, "executor.block");
//   on every step:  blocks.Step(ev.block, ev.step, unmasked).AddEvent("step", {...});
//   at the end:     blocks.EndOk();   or   blocks.EndError(message);
//
// The span of block b starts where the previous block ended (the first block: where the
// BlockSpans was made) and ends at its last step, so the blocks tile the job without gaps or
// overlap. It is ended when a step of another block arrives, or by EndOk / EndError. Its
// attributes: block (the index), first_step, last_step, steps and unmasked (the sum of the
// `unmasked` counts given to Step).
//
// When the parent is not recording (tracing off, or the trace not sampled) a BlockSpans holds
// nothing and every call is an inline null check.
// Not thread-safe: one owner (the loop that reports the steps).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/telemetry/span.h"
#include "common/telemetry/tracer.h"

namespace unmask::telemetry {

class BlockSpans {
 public:
  BlockSpans() = default;  // off
  BlockSpans(const Tracer& tracer, const Span& parent, std::string_view name);
  ~BlockSpans() { EndOk(); }
  BlockSpans(BlockSpans&&) noexcept = default;
  BlockSpans& operator=(BlockSpans&&) noexcept = default;
  BlockSpans(const BlockSpans&) = delete;
  BlockSpans& operator=(const BlockSpans&) = delete;

  bool recording() const { return tracer_ != nullptr; }

  // Records step `step` of block `block`, which unmasked `unmasked` tokens; starts the block's
  // span (ending the previous block's) when `block` differs from the last step's. Returns the
  // block's span, for the caller's own events (a no-op span when not recording).
  Span& Step(std::int64_t block, std::int64_t step, std::int64_t unmasked) {
    if (tracer_ != nullptr) StepSlow(block, step, unmasked);
    return current_;
  }
  // Ends the current block's span (OK) at its last step. Later calls do nothing.
  void EndOk() {
    if (tracer_ != nullptr && current_.recording()) Close(SpanStatus::kOk, {}, last_step_ns_);
  }
  // Ends the current block's span now with an error (the job failed or was cancelled in it).
  void EndError(std::string_view message) {
    if (tracer_ != nullptr && current_.recording()) Close(SpanStatus::kError, message, 0);
  }

  // Blocks started so far.
  std::int64_t blocks_started() const { return blocks_started_; }

 private:
  void StepSlow(std::int64_t block, std::int64_t step, std::int64_t unmasked);
  void Close(SpanStatus status, std::string_view message, std::uint64_t end_unix_nano);

  const Tracer* tracer_ = nullptr;
  SpanContext parent_;
  std::string name_;
  Span current_;
  std::int64_t block_ = -1, first_step_ = 0, last_step_ = 0, steps_ = 0, unmasked_ = 0;
  std::int64_t blocks_started_ = 0;
  std::uint64_t last_step_ns_ = 0;  // the previous step's time: where a new block starts
};

}  // namespace unmask::telemetry
