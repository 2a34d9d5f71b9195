#include "services/executor/running_job.h"

#include <algorithm>

#include "common/model/allocator.h"
#include "common/telemetry/log.h"
#include "common/telemetry/metrics.h"

namespace unmask::executor {
namespace {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

void FailJob(Job& job, Status status) {
  telemetry::Log(status.code() == StatusCode::kCancelled ? telemetry::LogLevel::kInfo : telemetry::LogLevel::kWarn,
                 job.request().trace_context.trace_id_hex(), job.request().job_id, "job failed",
                 {{"error", status.ToString()}});
  JobEvent ev;
  ev.kind = JobEvent::Kind::kFailed;
  ev.status = std::move(status);
  job.Push(std::move(ev));
}

StatusOr<std::unique_ptr<RunningJob>> RunningJob::Start(std::shared_ptr<Job> job,
                                                        std::shared_ptr<const model::LladaModel> model,
                                                        const RunContext& context) {
  sampler::PromptBatch prompts;
  prompts.ids = {job->request().prompt_ids};
  prompts.canvas = job->request().canvas;
  UNMASK_ASSIGN_OR_RETURN(auto sampler, sampler::StartStepSampler(*model, prompts, job->request().params));
  return std::unique_ptr<RunningJob>(new RunningJob(std::move(job), std::move(model), std::move(sampler), context));
}

RunningJob::RunningJob(std::shared_ptr<Job> job, std::shared_ptr<const model::LladaModel> model,
                       std::unique_ptr<sampler::StepSampler> sampler, const RunContext& context)
    : job_(std::move(job)), model_(std::move(model)), sampler_(std::move(sampler)), context_(context),
      start_(Clock::now()) {
  const JobRequest& req = job_->request();
  span_ = context_.tracer->StartSpan("executor.job", req.trace_context);
  if (span_.recording()) {
    span_.SetAttribute("job.id", req.job_id);
    span_.SetAttribute("executor.id", context_.executor_id);
    span_.SetAttribute("model", context_.model_id);
    span_.SetAttribute("sampler", generation::SamplerModeName(req.params.sampler));
    span_.SetAttribute("prompt_tokens", static_cast<std::int64_t>(req.prompt_ids.size()));
    span_.SetAttribute("gen_length", req.params.gen_length);
    span_.SetAttribute("block_length", req.params.block_length);
    span_.SetAttribute("steps", req.params.steps);
    span_.SetAttribute("queued_seconds", Seconds(start_ - job_->submitted()));
  }
  blocks_ = telemetry::BlockSpans(*context_.tracer, span_, "executor.block");
  const auto sequence =
      static_cast<std::int64_t>(req.prompt_ids.size() + req.canvas.suffix.size()) + req.params.gen_length;
  if (req.params.likelihood) {
    // Forwards of the rows the scheduler planned memory for (its clamp sets rows_per_forward; a
    // request that reaches the executor without it runs one sample a forward).
    const std::int64_t rows = std::max<std::int32_t>(1, req.params.likelihood->rows_per_forward);
    estimator_ = std::make_unique<sampler::LikelihoodEstimator>(*model_, req.prompt_ids, req.params,
                                                                sequence * rows * (req.params.cfg_scale > 0 ? 2 : 1));
  }
  if (req.params.prompt_logprobs >= 0) {
    scorer_ = std::make_unique<sampler::PromptScorer>(*model_, req.prompt_ids,
                                                      sampler::ScoringFor(*model_, req.params, sequence));
    if (scorer_->done()) ScoreNext();  // a one-token prompt: nothing to run
  }
  if (context_.metrics != nullptr) context_.metrics->ObserveQueueWait(Seconds(start_ - job_->submitted()));
}

void RunningJob::ScoreNext() {
  if (scorer_ == nullptr) {
    EstimateNext();
    return;
  }
  const auto begin = Clock::now();
  scorer_->Next();
  scoring_seconds_ += Seconds(Clock::now() - begin);
  if (!scorer_->done()) return;
  const auto& scored = scorer_->result();
  for (std::size_t j = 0; j < scored.size(); ++j)
    if (scored[j]) prompt_logprobs_.emplace_back(static_cast<std::int64_t>(j), *scored[j]);
  span_.SetAttribute("prompt_logprobs.seconds", scoring_seconds_);
  span_.SetAttribute("prompt_logprobs.forwards", scorer_->forwards());
  scorer_.reset();
  // The scoring's freed blocks would stay in the heaps (allocator.h's trim threshold) under the
  // steps' own peak: measured 4-9 MiB over it on bench_memory's dense cases without this.
  model::ReleaseFreeHeap();
}

void RunningJob::EstimateNext() {
  const auto begin = Clock::now();
  estimator_->Next();
  likelihood_seconds_ += Seconds(Clock::now() - begin);
  if (!estimator_->done()) return;
  likelihood_ = estimator_->result();
  span_.SetAttribute("likelihood.seconds", likelihood_seconds_);
  span_.SetAttribute("likelihood.forwards", likelihood_->forwards);
  span_.SetAttribute("likelihood.samples", likelihood_->samples);
  estimator_.reset();
  model::ReleaseFreeHeap();  // as after the prompt's scoring
}

bool RunningJob::StillWanted(Clock::time_point now) {
  if (!job_->cancelled() && now >= job_->request().deadline) {
    job_->Cancel(Status(StatusCode::kDeadlineExceeded,
                        "job " + job_->request().job_id + ": deadline passed after step " +
                            std::to_string(sampler_->Result().steps_run)));
  }
  if (!job_->cancelled()) return true;
  Fail(job_->cancel_reason());
  return false;
}

void RunningJob::OnStep(const sampler::StepEvent& ev, double seconds, std::int64_t forward, int batch) {
  step_seconds_.push_back(seconds);
  largest_batch_ = std::max(largest_batch_, batch);
  const auto unmasked = static_cast<std::int64_t>(ev.positions[0].size());
  blocks_.Step(ev.block, ev.step, unmasked)
      .AddEvent("step", {{"step", ev.step},
                         {"block", ev.block},
                         {"unmasked", unmasked},
                         {"seconds", seconds},
                         {"forward", forward},
                         {"batch.jobs", static_cast<std::int64_t>(batch)}});
  sampler::RecordLogprobs(ev, logprobs_);
  JobEvent out;
  out.step = {ev.step, ev.block, ev.step_in_block, ev.positions[0], ev.tokens[0], Seconds(Clock::now() - start_),
              ev.logprobs.empty() ? std::vector<sampler::TokenLogprob>{} : ev.logprobs[0]};
  if (!prompt_logprobs_sent_) out.step.prompt_logprobs = prompt_logprobs_;
  prompt_logprobs_sent_ = true;
  job_->Push(std::move(out));
}

void RunningJob::Fail(const Status& status) {
  blocks_.EndError(status.ToString());
  span_.SetError(status.ToString());
  span_.End();
  FailJob(*job_, status);
}

void RunningJob::Complete() {
  const sampler::GenerationResult result = sampler_->Result();
  const double running = Seconds(Clock::now() - start_);
  const auto& params = job_->request().params;
  JobEvent done;
  done.kind = JobEvent::Kind::kCompleted;
  Completion& c = done.completed;
  c.ids = result.output[0];
  c.finish_reason = "length";
  // A template's fixed tokens after an EOS are part of the answer: it is never cut.
  const bool may_cut = params.stop_at_eos && !job_->request().canvas.has_fixed_region();
  for (std::size_t i = 0; i < c.ids.size(); ++i) {
    if (c.ids[i] == params.eos_id || c.ids[i] == params.eot_id) {
      c.finish_reason = "eos";
      if (may_cut) c.ids.resize(i);
      break;
    }
  }
  sampler::FinishLogprobs(result.output, logprobs_);
  for (std::size_t i = 0; !logprobs_.empty() && i < c.ids.size(); ++i)
    if (logprobs_[0][i]) c.logprobs.emplace_back(static_cast<std::int64_t>(i), *logprobs_[0][i]);
  c.prompt_logprobs = prompt_logprobs_;
  if (!generates()) {  // nothing generated: the sampler never stepped
    c.ids.clear();
    c.logprobs.clear();
    c.likelihood = likelihood_;
  }
  c.sampler = result.sampler;
  c.steps_run = result.steps_run;
  c.queued_seconds = Seconds(start_ - job_->submitted());
  c.running_seconds = running;
  c.step_seconds = step_seconds_;
  c.batch_size = largest_batch_;
  const auto tokens = generates() ? static_cast<std::int64_t>(result.output[0].size()) : std::int64_t{0};
  blocks_.EndOk();
  span_.SetAttribute("batch.size", static_cast<std::int64_t>(largest_batch_));
  span_.SetAttribute("blocks", blocks_.blocks_started());
  span_.SetAttribute("tokens.generated", tokens);
  span_.SetAttribute("steps_run", c.steps_run);
  span_.SetAttribute("finish_reason", c.finish_reason);
  span_.SetAttribute("running_seconds", running);
  span_.SetOk();
  telemetry::Log(telemetry::LogLevel::kInfo, span_.trace_id_hex(), job_->request().job_id, "job done",
                 {{"steps", std::to_string(c.steps_run)},
                  {"tokens", std::to_string(tokens)},
                  {"batch", std::to_string(c.batch_size)},
                  {"seconds", std::to_string(running)},
                  {"finish_reason", c.finish_reason}});
  span_.End();
  job_->Push(std::move(done));
  if (context_.metrics != nullptr) {
    context_.metrics->ObserveJobRun(running);
    context_.metrics->AddGeneratedTokens(static_cast<std::uint64_t>(tokens));
    if (running > 0) context_.metrics->SetTokensPerSecond(static_cast<double>(tokens) / running);
  }
}

}  // namespace unmask::executor
