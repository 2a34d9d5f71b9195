// The executor's logic, free of gRPC: continuous batching at step level. Each worker thread
// keeps a running batch; before every step it admits queued jobs (up to max_batch running jobs,
// within the memory budget), drops the cancelled and the expired, and runs ONE packed forward
// for the next step of every running job (sampler::StepTogether over
// model::LladaModel::HiddenPacked), whatever their prompt lengths, gen/block lengths, steps,
// sampler modes, temperatures, seeds or guidance; then each job takes its own step and leaves the
// batch when it is done. A job never waits for a batch to finish, and gets exactly what it gets
// alone (step_sampler.h): the forward packs the jobs' rows without padding, attention runs per
// job over its own keys, and each job keeps its own K/V cache and random generator.
//
// Memory: every job is charged the peak the memory model (common/fitting) predicts for it alone;
// a job joins the batch only while the charges of the running jobs stay within the job budget
// (queued in order: a job that does not fit yet waits for running jobs to leave), and one that
// could never fit is refused at Submit (ResourceExhausted, reason DOES_NOT_FIT).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/model/llada_model.h"
#include "common/telemetry/tracer.h"
#include "services/executor/job.h"

namespace unmask::telemetry {
class ServiceMetrics;
}

namespace unmask::executor {

struct ExecutorOptions {
  std::string executor_id = "executor";
  std::string model_id;
  std::string device = "cpu";
  std::string weights_precision;  // what the loader holds, for GetCapacity
  int workers = 1;
  int max_batch = 8;
  int max_queued_jobs = 64;
  std::uint64_t memory_reserve_bytes = 512ull << 20;
  // What the running jobs' predicted peaks may add up to; 0: the memory available at start
  // less memory_reserve_bytes.
  std::uint64_t job_budget_bytes = 0;
};

struct CapacityReport {
  std::string executor_id, device;
  std::uint64_t budget_bytes = 0, in_use_bytes = 0;
  int running_jobs = 0, queued_jobs = 0, max_concurrent_jobs = 0;
  std::uint64_t job_budget_bytes = 0, job_bytes_in_use = 0;  // the admission budget and its charges
  std::vector<std::string> models;
  std::string model_config_json, precision;
  std::string compute_precision, compute_reason;  // what the model computes in, and why
};

// How many running jobs one of `workers` takes while `jobs` are running or queued in all: its
// share, ceil(jobs / workers), at least 1 and at most max_batch. A burst of jobs is spread over
// the workers (each packs its share into one forward per step) instead of filling the first
// worker to wake while the others idle; whenever a job waits, some worker is under its share.
std::size_t WorkerShare(std::size_t jobs, std::size_t workers, std::size_t max_batch);

// Telemetry: every job that runs gets a span (executor.job, child of JobRequest::trace_context)
// with a child span per diffusion block (executor.block) that carries one "step" event per
// diffusion step of the block, with the number of the packed forward it shared ("forward": the
// same in every job of that forward) and how many jobs shared it ("batch.jobs"); the metrics
// (when given) get step seconds, jobs per forward, queue wait, run seconds, generated tokens,
// tokens per second and the memory gauges.
class ExecutorCore {
 public:
  // `tracer` must outlive the core; `metrics` may be null.
  ExecutorCore(std::shared_ptr<const model::LladaModel> model, ExecutorOptions options,
               const telemetry::Tracer& tracer = telemetry::Tracer::Disabled(),
               telemetry::ServiceMetrics* metrics = nullptr);
  ~ExecutorCore();  // stops the workers; queued jobs fail with Unavailable

  // Validates and queues a job. InvalidArgument for bad parameters (naming the field),
  // ResourceExhausted when the queue is full.
  StatusOr<std::shared_ptr<Job>> Submit(JobRequest request);
  CapacityReport Capacity() const;
  // Runs one tiny generation so that the first real job does not pay for lazy initialization.
  Status Warmup();
  // New jobs use `model` (after a re-attach), held as `weights_precision`; running batches
  // finish on the one they started with, which is returned. A null model (the loader unloaded
  // it) makes new and queued jobs fail with Unavailable and empties GetCapacity's models.
  std::shared_ptr<const model::LladaModel> ReplaceModel(std::shared_ptr<const model::LladaModel> model,
                                                        const std::string& weights_precision);
  std::shared_ptr<const model::LladaModel> model() const;
  // What `request` is charged against the job budget on the serving model: the peak the memory
  // model (common/fitting) predicts for it alone; 0 while no model is served.
  std::uint64_t Charge(const JobRequest& request) const;
  // The model new jobs run on; Unavailable, naming the model, while there is none.
  StatusOr<std::shared_ptr<const model::LladaModel>> ServingModel() const;

 private:
  struct Slot;
  void WorkerLoop();
  // Queued jobs that may join a batch holding `running` jobs charged `charged` bytes.
  std::vector<std::shared_ptr<Job>> AdmitLocked(std::size_t running, std::uint64_t charged);
  void Admit(std::vector<Slot>& batch, const std::vector<std::shared_ptr<Job>>& jobs);
  // One step of every running job (one packed forward per model); removes the jobs that ended.
  void Step(std::vector<Slot>& batch);
  // The peak the memory model predicts for the request alone on `model`.
  std::uint64_t JobBytes(const JobRequest& request, const model::LladaModel& model) const;

  ExecutorOptions options_;
  const telemetry::Tracer& tracer_;
  telemetry::ServiceMetrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const model::LladaModel> model_;
  std::deque<std::shared_ptr<Job>> queue_;
  int running_ = 0;
  std::uint64_t charged_bytes_ = 0;  // all workers' running jobs
  std::atomic<std::int64_t> forwards_{0};
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace unmask::executor
