#include "services/executor/executor_core.h"

#include <fstream>
#include <sstream>

#include "common/generation/validate.h"
#include "common/telemetry/block_spans.h"
#include "common/telemetry/log.h"
#include "common/telemetry/metrics.h"
#include "common/registry/device_budget.h"

namespace unmask::executor {
namespace {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::uint64_t ProcessRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

void Fail(Job& job, Status status) {
  telemetry::Log(status.code() == StatusCode::kCancelled ? telemetry::LogLevel::kInfo : telemetry::LogLevel::kWarn,
                 job.request().trace_context.trace_id_hex(), job.request().job_id, "job failed",
                 {{"error", status.ToString()}});
  JobEvent ev;
  ev.kind = JobEvent::Kind::kFailed;
  ev.status = std::move(status);
  job.Push(std::move(ev));
}

// The jobs of a batch still worth running: a job cancelled, or past its deadline, while queued
// fails here.
std::vector<std::shared_ptr<Job>> JobsToRun(const std::vector<std::shared_ptr<Job>>& all, Clock::time_point start) {
  std::vector<std::shared_ptr<Job>> batch;
  for (const auto& job : all) {
    if (job->cancelled()) {
      Fail(*job, job->cancel_reason());
    } else if (start >= job->request().deadline) {
      Fail(*job, Status(StatusCode::kDeadlineExceeded, "job " + job->request().job_id + ": deadline passed in the queue"));
    } else {
      batch.push_back(job);
    }
  }
  return batch;
}

// One batch's run, by step: a span per job (StartSpans), the events of each step (OnStep), each
// job's end (Finish).
struct BatchRun {
  BatchRun(const std::vector<std::shared_ptr<Job>>& batch, Clock::time_point start, const ExecutorOptions& options,
           const telemetry::Tracer& tracer, telemetry::ServiceMetrics* metrics)
      : batch(batch), start(start), options(options), tracer(tracer), metrics(metrics), last_step(start),
        live(batch.size(), true) {}

  void StartSpans();
  // Pushes the step to every live job; false once none is live (the sampler then stops).
  bool OnStep(const sampler::StepEvent& ev);
  void Finish(const StatusOr<sampler::GenerationResult>& result, const JobRequest& first);

  const std::vector<std::shared_ptr<Job>>& batch;
  const Clock::time_point start;
  const ExecutorOptions& options;
  const telemetry::Tracer& tracer;
  telemetry::ServiceMetrics* metrics;
  std::vector<telemetry::Span> spans;
  std::vector<telemetry::BlockSpans> blocks;
  std::vector<double> step_seconds;
  Clock::time_point last_step;
  std::vector<bool> live;
};

void BatchRun::StartSpans() {
  // One span per job (each continues its own trace), with a child span per diffusion block that
  // carries an event per step.
  spans.reserve(batch.size());
  blocks.reserve(batch.size());
  for (const auto& job : batch) {
    const JobRequest& req = job->request();
    telemetry::Span span = tracer.StartSpan("executor.job", req.trace_context);
    if (span.recording()) {
      span.SetAttribute("job.id", req.job_id);
      span.SetAttribute("executor.id", options.executor_id);
      span.SetAttribute("model", options.model_id);
      span.SetAttribute("sampler", generation::SamplerModeName(req.params.sampler));
      span.SetAttribute("batch.size", static_cast<std::int64_t>(batch.size()));
      span.SetAttribute("prompt_tokens", static_cast<std::int64_t>(req.prompt_ids.size()));
      span.SetAttribute("gen_length", req.params.gen_length);
      span.SetAttribute("block_length", req.params.block_length);
      span.SetAttribute("steps", req.params.steps);
      span.SetAttribute("queued_seconds", Seconds(start - job->submitted()));
    }
    blocks.emplace_back(tracer, span, "executor.block");
    spans.push_back(std::move(span));
  }
}

bool BatchRun::OnStep(const sampler::StepEvent& ev) {
  const auto now = Clock::now();
  const double dt = Seconds(now - last_step);
  step_seconds.push_back(dt);
  last_step = now;
  if (metrics != nullptr) metrics->ObserveStep(dt);
  bool any_live = false;
  for (std::size_t r = 0; r < batch.size(); ++r) {
    if (!live[r]) continue;
    Job& job = *batch[r];
    if (!job.cancelled() && now >= job.request().deadline)
      job.Cancel(Status(StatusCode::kDeadlineExceeded, "job " + job.request().job_id + ": deadline passed after step " +
                                                           std::to_string(ev.step)));
    if (job.cancelled()) {
      live[r] = false;  // its row rides along; the others are not held up
      blocks[r].EndError(job.cancel_reason().ToString());
      spans[r].SetError(job.cancel_reason().ToString());
      spans[r].End();
      Fail(job, job.cancel_reason());
      continue;
    }
    const auto unmasked = static_cast<std::int64_t>(ev.positions[r].size());
    blocks[r].Step(ev.block, ev.step, unmasked)
        .AddEvent("step", {{"step", ev.step}, {"block", ev.block}, {"unmasked", unmasked}, {"seconds", dt}});
    JobEvent out;
    out.step = {ev.step, ev.block, ev.step_in_block, ev.positions[r], ev.tokens[r], ev.elapsed_seconds};
    job.Push(std::move(out));
    any_live = true;
  }
  return any_live;
}

void BatchRun::Finish(const StatusOr<sampler::GenerationResult>& result, const JobRequest& first) {
  const double running = Seconds(Clock::now() - start);
  std::uint64_t generated = 0;
  for (std::size_t r = 0; r < batch.size(); ++r) {
    if (!live[r]) continue;
    Job& job = *batch[r];
    if (!result.ok()) {
      blocks[r].EndError(result.status().ToString());
      spans[r].SetError(result.status().ToString());
      spans[r].End();
      Fail(job, result.status());
      continue;
    }
    JobEvent done;
    done.kind = JobEvent::Kind::kCompleted;
    Completion& c = done.completed;
    c.ids = result->output[r];
    c.finish_reason = "length";
    for (std::size_t i = 0; i < c.ids.size(); ++i) {
      if (c.ids[i] == first.params.eos_id || c.ids[i] == first.params.eot_id) {
        c.finish_reason = "eos";
        if (job.request().params.stop_at_eos) c.ids.resize(i);
        break;
      }
    }
    c.sampler = result->sampler;
    c.steps_run = result->steps_run;
    c.queued_seconds = Seconds(start - job.submitted());
    c.running_seconds = running;
    c.step_seconds = step_seconds;
    c.batch_size = static_cast<int>(batch.size());
    const auto tokens = static_cast<std::int64_t>(result->output[r].size());
    generated += static_cast<std::uint64_t>(tokens);
    telemetry::Span& span = spans[r];
    blocks[r].EndOk();
    span.SetAttribute("blocks", blocks[r].blocks_started());
    span.SetAttribute("tokens.generated", tokens);
    span.SetAttribute("steps_run", c.steps_run);
    span.SetAttribute("finish_reason", c.finish_reason);
    span.SetAttribute("running_seconds", running);
    span.SetOk();
    telemetry::Log(telemetry::LogLevel::kInfo, span.trace_id_hex(), job.request().job_id, "job done",
                   {{"steps", std::to_string(c.steps_run)},
                    {"tokens", std::to_string(tokens)},
                    {"batch", std::to_string(c.batch_size)},
                    {"seconds", std::to_string(running)},
                    {"finish_reason", c.finish_reason}});
    span.End();
    job.Push(std::move(done));
    if (metrics != nullptr) metrics->ObserveJobRun(running);
  }
  if (metrics != nullptr && generated > 0) {
    metrics->AddGeneratedTokens(generated);
    if (running > 0) metrics->SetTokensPerSecond(static_cast<double>(generated) / running);
    metrics->SetMemoryUsed(static_cast<double>(ProcessRssBytes()));
  }
}

}  // namespace

std::string BatchKey(const JobRequest& r) {
  const auto& p = r.params;
  if (p.temperature != 0 || p.remasking != generation::Remasking::kLowConfidence) return "";
  std::ostringstream key;
  key << p.attention_query_chunk << '/' << p.gen_length << '/' << p.block_length << '/' << p.steps << '/' << p.cfg_scale
      << '/' << p.logits_eos_inf << p.confidence_eos_eot_inf << '/' << static_cast<int>(p.sampler) << '/'
      << p.threshold << '/' << p.factor << '/' << p.early_stop;
  return key.str();
}

ExecutorCore::ExecutorCore(std::shared_ptr<const model::LladaModel> model, ExecutorOptions options,
                           const telemetry::Tracer& tracer, telemetry::ServiceMetrics* metrics)
    : options_(std::move(options)), tracer_(tracer), metrics_(metrics), model_(std::move(model)) {
  for (int i = 0; i < std::max(1, options_.workers); ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ExecutorCore::~ExecutorCore() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
  for (auto& job : queue_) Fail(*job, UnavailableError("the executor is shutting down"));
}

std::shared_ptr<const model::LladaModel> ExecutorCore::model() const {
  std::lock_guard<std::mutex> lock(mu_);
  return model_;
}

std::shared_ptr<const model::LladaModel> ExecutorCore::ReplaceModel(std::shared_ptr<const model::LladaModel> model,
                                                                    const std::string& weights_precision) {
  std::lock_guard<std::mutex> lock(mu_);
  options_.weights_precision = weights_precision;
  std::swap(model_, model);
  return model;
}

StatusOr<std::shared_ptr<const model::LladaModel>> ExecutorCore::ServingModel() const {
  auto m = model();
  if (m == nullptr) {
    return UnavailableError("executor " + options_.executor_id + ": model '" + options_.model_id +
                            "' was unloaded from the loader; this executor serves again once it is loaded again");
  }
  return m;
}

StatusOr<std::shared_ptr<Job>> ExecutorCore::Submit(JobRequest request) {
  UNMASK_ASSIGN_OR_RETURN(auto m, ServingModel());
  if (request.prompt_ids.empty()) return InvalidArgumentError("prompt_ids: must not be empty");
  sampler::PromptBatch check;
  check.ids = {request.prompt_ids};
  UNMASK_RETURN_IF_ERROR(
      sampler::NormalizePromptBatch(check, m->config().pad_token_id, m->config().embedding_size).status());
  UNMASK_RETURN_IF_ERROR(
      generation::ValidateParams(request.params, m->config(), static_cast<std::int64_t>(request.prompt_ids.size())));
  UNMASK_RETURN_IF_ERROR(generation::ValidateFields(request.params));
  auto job = std::make_shared<Job>(std::move(request));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return UnavailableError("the executor is shutting down");
    if (static_cast<int>(queue_.size()) >= options_.max_queued_jobs)
      return ResourceExhaustedError("executor " + options_.executor_id + ": queue is full (" +
                                    std::to_string(options_.max_queued_jobs) + " jobs)");
    queue_.push_back(job);
  }
  cv_.notify_one();
  return job;
}

std::vector<std::shared_ptr<Job>> ExecutorCore::TakeBatchLocked() {
  std::vector<std::shared_ptr<Job>> batch{queue_.front()};
  queue_.pop_front();
  const std::string key = BatchKey(batch[0]->request());
  if (key.empty()) return batch;
  for (auto it = queue_.begin(); it != queue_.end() && static_cast<int>(batch.size()) < options_.max_batch;) {
    if (BatchKey((*it)->request()) == key) {
      batch.push_back(*it);
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  return batch;
}

void ExecutorCore::WorkerLoop() {
  while (true) {
    std::vector<std::shared_ptr<Job>> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      batch = TakeBatchLocked();
      running_ += static_cast<int>(batch.size());
    }
    RunBatch(batch);
    std::lock_guard<std::mutex> lock(mu_);
    running_ -= static_cast<int>(batch.size());
  }
}

void ExecutorCore::RunBatch(const std::vector<std::shared_ptr<Job>>& all) {
  const auto start = Clock::now();
  const std::vector<std::shared_ptr<Job>> batch = JobsToRun(all, start);
  if (batch.empty()) return;
  auto serving = ServingModel();
  if (!serving.ok()) {
    for (const auto& job : batch) Fail(*job, serving.status());
    return;
  }
  auto model = *std::move(serving);
  const JobRequest& first = batch[0]->request();
  sampler::PromptBatch prompts;
  for (const auto& job : batch) prompts.ids.push_back(job->request().prompt_ids);

  BatchRun run(batch, start, options_, tracer_, metrics_);
  run.StartSpans();
  auto on_step = [&run](const sampler::StepEvent& ev) { return run.OnStep(ev); };
  model::ScopedAttentionChunk chunk(first.params.attention_query_chunk);  // the same for the whole batch (BatchKey)
  auto result = sampler::Generate(*model, prompts, first.params, on_step);
  run.Finish(result, first);
}

Status ExecutorCore::Warmup() {
  UNMASK_ASSIGN_OR_RETURN(auto m, ServingModel());
  sampler::PromptBatch prompts;
  prompts.ids = {{m->config().eos_token_id}};
  generation::GenerationParams p;
  p.gen_length = p.block_length = p.steps = 1;
  p.mask_id = m->config().mask_token_id;
  return sampler::Generate(generation::SamplerMode::kReference, *m, prompts, p).status();
}

CapacityReport ExecutorCore::Capacity() const {
  CapacityReport c;
  c.executor_id = options_.executor_id;
  c.device = options_.device;
  auto budget = weights::DeviceBudget::ForCpu();
  const std::uint64_t available = budget.ok() ? budget->available_bytes() : 0;
  c.budget_bytes = available > options_.memory_reserve_bytes ? available - options_.memory_reserve_bytes : 0;
  c.in_use_bytes = ProcessRssBytes();
  if (metrics_ != nullptr) {
    metrics_->SetMemoryUsed(static_cast<double>(c.in_use_bytes));
    metrics_->SetMemoryBudget(static_cast<double>(c.budget_bytes));
  }
  std::lock_guard<std::mutex> lock(mu_);
  c.running_jobs = running_;
  c.queued_jobs = static_cast<int>(queue_.size());
  c.max_concurrent_jobs = static_cast<int>(workers_.size()) * options_.max_batch;
  if (model_ != nullptr) {  // none while the loader has the model unloaded
    c.models = {options_.model_id};
    c.model_config_json = model_->config().ToJsonText();
    c.precision = options_.weights_precision;
    c.compute_precision = model::PrecisionName(model_->options().precision);
    c.compute_reason = model_->options().precision_why;
  }
  return c;
}

}  // namespace unmask::executor
