// The executor's logic, free of gRPC: a fixed set of worker threads own the compute; queued
// jobs that can share forward passes are batched (up to max_batch) and each job's rows are
// reported to it step by step.
//
// Batching rule: jobs batch together when they agree on everything but the prompt and the seed
// — same gen_length, block_length, steps, sampler mode and options, attention chunk — and are
// deterministic (temperature 0, low-confidence remasking), because random draws are made over
// the whole batch tensor and would make a batched row differ from the same job run alone.
// Prompts of different lengths are left-padded to the longest and the padding is masked out of
// attention (a key-padding mask), as the official generate() does; RoPE depends only on the
// distance between positions, so a padded row computes what it computes alone.
#pragma once

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
};

struct CapacityReport {
  std::string executor_id, device;
  std::uint64_t budget_bytes = 0, in_use_bytes = 0;
  int running_jobs = 0, queued_jobs = 0, max_concurrent_jobs = 0;
  std::vector<std::string> models;
  std::string model_config_json, precision;
  std::string compute_precision, compute_reason;  // what the model computes in, and why
};

// Telemetry: every job that runs gets a span (executor.job, child of JobRequest::trace_context)
// with a child span per diffusion block (executor.block) that carries one "step" event per
// diffusion step of the block; the metrics (when given) get step and run seconds,
// generated tokens, tokens per second and the memory gauges.
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
  // The model new jobs run on; Unavailable, naming the model, while there is none.
  StatusOr<std::shared_ptr<const model::LladaModel>> ServingModel() const;

 private:
  void WorkerLoop();
  void RunBatch(const std::vector<std::shared_ptr<Job>>& batch);
  std::vector<std::shared_ptr<Job>> TakeBatchLocked();

  ExecutorOptions options_;
  const telemetry::Tracer& tracer_;
  telemetry::ServiceMetrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const model::LladaModel> model_;
  std::deque<std::shared_ptr<Job>> queue_;
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// The key two jobs must share to be batched; empty when the job must run alone.
std::string BatchKey(const JobRequest& request);

}  // namespace unmask::executor
