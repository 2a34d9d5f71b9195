#include "services/executor/executor_core.h"

#include <fstream>
#include <sstream>

#include <algorithm>

#include "common/fitting/clamp.h"
#include "common/fitting/memory_model.h"
#include "common/generation/validate.h"
#include "common/telemetry/log.h"
#include "common/telemetry/metrics.h"
#include "common/registry/device_budget.h"
#include "services/executor/running_job.h"

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

std::uint64_t JobBudget(const ExecutorOptions& options) {
  if (options.job_budget_bytes > 0) return options.job_budget_bytes;
  auto budget = weights::DeviceBudget::ForJobs();
  const std::uint64_t available = budget.ok() ? budget->available_bytes() : 0;
  return available > options.memory_reserve_bytes ? available - options.memory_reserve_bytes : 0;
}

}  // namespace

struct ExecutorCore::Slot {
  std::unique_ptr<RunningJob> run;
  std::uint64_t charge = 0;
};

ExecutorCore::ExecutorCore(std::shared_ptr<const model::LladaModel> model, ExecutorOptions options,
                           const telemetry::Tracer& tracer, telemetry::ServiceMetrics* metrics)
    : options_(std::move(options)), tracer_(tracer), metrics_(metrics), model_(std::move(model)) {
  options_.job_budget_bytes = JobBudget(options_);
  for (int i = 0; i < std::max(1, options_.workers); ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ExecutorCore::~ExecutorCore() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
  for (auto& job : queue_) FailJob(*job, UnavailableError("the executor is shutting down"));
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

std::uint64_t ExecutorCore::Charge(const JobRequest& request) const {
  auto m = model();
  return m == nullptr ? 0 : JobBytes(request, *m);
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
  UNMASK_RETURN_IF_ERROR(generation::ValidateParams(
      request.params, m->config(), static_cast<std::int64_t>(request.prompt_ids.size() + request.canvas.suffix.size())));
  UNMASK_RETURN_IF_ERROR(generation::ValidateCanvas(request.canvas, request.params.gen_length, m->config().embedding_size,
                                                    request.params.mask_id));
  UNMASK_RETURN_IF_ERROR(generation::ValidateSamplerForModel(request.params.sampler, m->config()));
  const std::uint64_t charge = JobBytes(request, *m);
  if (charge > options_.job_budget_bytes) {
    return ResourceExhaustedError("executor " + options_.executor_id + ": the job needs " + fitting::HumanBytes(charge) +
                                  " at its peak, more than this executor's job budget of " +
                                  fitting::HumanBytes(options_.job_budget_bytes) + "; it can never run here")
        .WithReason("DOES_NOT_FIT", {{"needed_bytes", std::to_string(charge)},
                                     {"budget_bytes", std::to_string(options_.job_budget_bytes)}});
  }
  auto job = std::make_shared<Job>(std::move(request));
  job->set_charge_bytes(charge);
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

std::uint64_t ExecutorCore::JobBytes(const JobRequest& request, const model::LladaModel& model) const {
  fitting::GenerationRequest r;
  r.params = request.params;
  r.prompt_length = static_cast<std::int64_t>(request.prompt_ids.size() + request.canvas.suffix.size());
  r.compute_dtype_bytes = model.options().precision == model::Precision::kFloat32 ? 4 : 2;
  return fitting::EstimateRequest(model.config(), fitting::ShapeOf(r)).peak;
}

std::size_t WorkerShare(std::size_t jobs, std::size_t workers, std::size_t max_batch) {
  const std::size_t w = std::max<std::size_t>(1, workers);
  return std::min(max_batch, std::max<std::size_t>(1, (jobs + w - 1) / w));
}

std::vector<std::shared_ptr<Job>> ExecutorCore::AdmitLocked(std::size_t running, std::uint64_t charged) {
  std::vector<std::shared_ptr<Job>> admitted;
  const std::size_t limit = WorkerShare(static_cast<std::size_t>(running_) + queue_.size(), workers_.size(),
                                        static_cast<std::size_t>(std::max(1, options_.max_batch)));
  while (!queue_.empty() && running + admitted.size() < limit) {
    const std::uint64_t charge = queue_.front()->charge_bytes();
    // In order: the first job that does not fit yet waits for running jobs to leave (with
    // nothing running anything Submit accepted fits).
    if (charged + charge > options_.job_budget_bytes && charged > 0) break;
    charged += charge;
    charged_bytes_ += charge;
    admitted.push_back(queue_.front());
    queue_.pop_front();
  }
  running_ += static_cast<int>(admitted.size());
  if (metrics_ != nullptr) metrics_->SetQueueDepth(static_cast<double>(queue_.size()));
  return admitted;
}

void ExecutorCore::Admit(std::vector<Slot>& batch, const std::vector<std::shared_ptr<Job>>& jobs) {
  std::uint64_t released = 0;
  int failed = 0;
  for (const auto& job : jobs) {
    auto serving = ServingModel();
    StatusOr<std::unique_ptr<RunningJob>> run = serving.status();
    if (job->cancelled()) {
      run = job->cancel_reason();
    } else if (Clock::now() >= job->request().deadline) {
      run = Status(StatusCode::kDeadlineExceeded, "job " + job->request().job_id + ": deadline passed in the queue");
    } else if (serving.ok()) {
      run = RunningJob::Start(job, *std::move(serving),
                              RunContext{options_.executor_id, options_.model_id, &tracer_, metrics_});
    }
    if (run.ok()) {
      batch.push_back(Slot{*std::move(run), job->charge_bytes()});
    } else {
      FailJob(*job, run.status());
      released += job->charge_bytes();
      ++failed;
    }
  }
  if (failed == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  charged_bytes_ -= released;
  running_ -= failed;
}

void ExecutorCore::Step(std::vector<Slot>& batch) {
  // A job scoring its prompt runs one scoring forward instead of a step (its sampler waits).
  std::vector<Slot*> stepping;
  for (Slot& slot : batch) {
    if (!slot.run->scoring()) {
      if (slot.run->generates()) {
        stepping.push_back(&slot);
      } else {
        slot.run->Complete();  // a one-token prompt, scored as it started
      }
      continue;
    }
    try {
      slot.run->ScoreNext();
      if (!slot.run->scoring() && !slot.run->generates()) slot.run->Complete();  // score_only or likelihood
    } catch (const std::exception& e) {
      slot.run->Fail(InternalError(std::string("scoring the prompt: ") + e.what()));
    }
  }
  // Jobs started on a model that was since replaced finish on it: one packed forward per model.
  std::vector<const model::LladaModel*> models;
  for (const Slot* slot : stepping) {
    if (std::find(models.begin(), models.end(), slot->run->model()) == models.end()) models.push_back(slot->run->model());
  }
  for (const model::LladaModel* m : models) {
    std::vector<RunningJob*> jobs;
    std::vector<sampler::StepSampler*> samplers;
    for (Slot* slot : stepping) {
      if (slot->run->model() != m) continue;
      jobs.push_back(slot->run.get());
      samplers.push_back(&slot->run->sampler());
    }
    const auto begin = Clock::now();
    auto events = sampler::StepTogether(*m, samplers);
    const double seconds = Seconds(Clock::now() - begin);
    const std::int64_t forward = ++forwards_;
    if (metrics_ != nullptr) {
      metrics_->ObserveStep(seconds);
      metrics_->ObserveStepBatch(static_cast<double>(jobs.size()));
    }
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (!events[i].ok()) {
        jobs[i]->Fail(events[i].status());
        continue;
      }
      jobs[i]->OnStep(*events[i], seconds, forward, static_cast<int>(jobs.size()));
      if (!jobs[i]->sampler().running()) jobs[i]->Complete();
    }
  }
}

void ExecutorCore::WorkerLoop() {
  std::vector<Slot> batch;
  while (true) {
    std::vector<std::shared_ptr<Job>> admitted;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || !batch.empty(); });
      if (stopping_ && batch.empty()) return;  // running jobs finish; queued ones fail in ~ExecutorCore
      std::uint64_t charged = 0;
      for (const Slot& slot : batch) charged += slot.charge;
      if (!stopping_) admitted = AdmitLocked(batch.size(), charged);
    }
    Admit(batch, admitted);
    std::uint64_t released = 0;
    int left = 0;
    auto keep_if = [&](auto wanted) {
      std::vector<Slot> kept;
      for (Slot& slot : batch) {
        if (wanted(slot)) {
          kept.push_back(std::move(slot));
        } else {
          released += slot.charge;
          ++left;
        }
      }
      batch = std::move(kept);
    };
    const auto now = Clock::now();
    keep_if([now](Slot& slot) { return slot.run->StillWanted(now); });  // cancelled or expired: failed
    if (!batch.empty()) Step(batch);
    keep_if([](Slot& slot) { return !slot.run->job().finished(); });  // completed or failed in the step
    if (left == 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    charged_bytes_ -= released;
    running_ -= left;
  }
}

Status ExecutorCore::Warmup() {
  UNMASK_ASSIGN_OR_RETURN(auto m, ServingModel());
  sampler::PromptBatch prompts;
  prompts.ids = {{m->config().eos_token_id}};
  generation::GenerationParams p;
  p.sampler = generation::DefaultSampler(m->config());  // the mode this model's jobs run
  p.gen_length = p.block_length = p.steps = 1;
  p.mask_id = m->config().mask_token_id;
  return sampler::Generate(*m, prompts, p).status();
}

CapacityReport ExecutorCore::Capacity() const {
  CapacityReport c;
  c.executor_id = options_.executor_id;
  c.device = options_.device;
  auto budget = weights::DeviceBudget::ForJobs();
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
  c.job_budget_bytes = options_.job_budget_bytes;
  c.job_bytes_in_use = charged_bytes_;
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
