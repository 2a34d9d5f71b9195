// One generation job inside an executor: its request, and the queue of events its caller reads
// (one per step, then completed or failed). gRPC-free.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/generation/canvas.h"
#include "common/generation/params.h"
#include "common/sampler/likelihood_result.h"
#include "common/sampler/sampler_registry.h"
#include "common/telemetry/trace_context.h"
#include "common/util/status.h"

namespace unmask::executor {

using Clock = std::chrono::steady_clock;

struct JobRequest {
  std::string job_id;
  std::vector<std::int64_t> prompt_ids;
  // Everything the request asks for, the sampler mode and its options included
  // (params.attention_query_chunk > 0: this job's attention in chunks of this many query rows, the
  // smaller of it and the executor's --attention-chunk winning; 0: the executor's).
  generation::GenerationParams params;
  generation::Canvas canvas;  // infilling suffix / template with holes (empty: plain generation)
  Clock::time_point deadline = Clock::time_point::max();
  // The Run call's span: the job's span (executor.job) is its child. Invalid: a trace of its own.
  telemetry::SpanContext trace_context;
};

struct StepUpdate {
  std::int64_t step = 0, block = 0, step_in_block = 0;
  std::vector<std::int64_t> positions, tokens;
  double elapsed_seconds = 0;
  std::vector<sampler::TokenLogprob> logprobs;  // with params.logprobs: one per position
  // With params.prompt_logprobs, on the job's first step only: (index in the prompt, its logprob).
  std::vector<std::pair<std::int64_t, sampler::TokenLogprob>> prompt_logprobs;
};

struct Completion {
  std::vector<std::int64_t> ids;
  std::string sampler;
  std::int64_t steps_run = 0;
  double queued_seconds = 0, running_seconds = 0;
  std::vector<double> step_seconds;
  std::string finish_reason;  // "length" or "eos"
  int batch_size = 1;          // the most jobs that shared one of its forward passes
  // With params.logprobs: (position, its token's logprob as last committed), holes only, in order.
  std::vector<std::pair<std::int64_t, sampler::TokenLogprob>> logprobs;
  // With params.prompt_logprobs: (index in the prompt, its logprob), the second token on.
  std::vector<std::pair<std::int64_t, sampler::TokenLogprob>> prompt_logprobs;
  // With params.likelihood (then nothing was generated: ids empty, steps_run 0).
  std::optional<sampler::LikelihoodResult> likelihood;
};

struct JobEvent {
  enum class Kind { kStep, kCompleted, kFailed } kind = Kind::kStep;
  StepUpdate step;
  Completion completed;
  Status status;
};

class Job {
 public:
  explicit Job(JobRequest request) : request_(std::move(request)), submitted_(Clock::now()) {}

  const JobRequest& request() const { return request_; }
  Clock::time_point submitted() const { return submitted_; }

  // Caller side: waits up to `timeout` for the next event; false on timeout.
  bool Next(JobEvent& out, std::chrono::milliseconds timeout);
  // Stops the job at its next step (it then fails with `why`).
  void Cancel(Status why = CancelledError("cancelled by the client"));
  bool cancelled() const { return cancelled_.load(); }
  Status cancel_reason() const;

  // Worker side.
  void Push(JobEvent event);
  // The bytes the job is charged against the executor's job budget while it runs (set at Submit).
  std::uint64_t charge_bytes() const { return charge_bytes_; }
  void set_charge_bytes(std::uint64_t bytes) { charge_bytes_ = bytes; }
  bool finished() const { return finished_.load(); }

 private:
  JobRequest request_;
  Clock::time_point submitted_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> finished_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<JobEvent> events_;
  Status cancel_reason_;
  std::uint64_t charge_bytes_ = 0;
};

}  // namespace unmask::executor
