// One job in an executor's running batch (executor_core.h): its step sampler and the model it
// started on, its span (executor.job, with a child span per diffusion block carrying an event
// per step), and the events its caller reads: one per step, then completed or failed. gRPC-free.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/model/llada_model.h"
#include "common/sampler/likelihood.h"
#include "common/sampler/prompt_logprobs.h"
#include "common/sampler/step_sampler.h"
#include "common/telemetry/block_spans.h"
#include "common/telemetry/tracer.h"
#include "services/executor/job.h"

namespace unmask::telemetry {
class ServiceMetrics;
}

namespace unmask::executor {

// Fails `job` with `status` (logged; at info level when cancelled).
void FailJob(Job& job, Status status);

struct RunContext {
  std::string executor_id, model_id;
  const telemetry::Tracer* tracer = nullptr;
  telemetry::ServiceMetrics* metrics = nullptr;
};

class RunningJob {
 public:
  // Starts the job's sampler on `model` (its errors: the request's, as Submit checked them).
  static StatusOr<std::unique_ptr<RunningJob>> Start(std::shared_ptr<Job> job,
                                                     std::shared_ptr<const model::LladaModel> model,
                                                     const RunContext& context);

  Job& job() { return *job_; }
  sampler::StepSampler& sampler() { return *sampler_; }
  const model::LladaModel* model() const { return model_.get(); }

  // With params.prompt_logprobs, the job first scores its prompt, then with params.likelihood
  // estimates the continuation's likelihood, one forward per call of ScoreNext (the executor steps
  // its other jobs in between); its sampler steps once it is done, unless it generates nothing.
  bool scoring() const { return scorer_ != nullptr || estimator_ != nullptr; }
  void ScoreNext();
  // False for a likelihood or score_only job: it completes once scored, its sampler never steps.
  bool generates() const {
    const auto& p = job_->request().params;
    return !p.likelihood.has_value() && !p.score_only;
  }

  // False once the job was cancelled or passed its deadline; it has then failed.
  bool StillWanted(Clock::time_point now);
  // The step's event: pushed to the caller and recorded in the trace. `forward` numbers the
  // packed forward the step shared with `batch` jobs (the same number in every job that shared it).
  void OnStep(const sampler::StepEvent& ev, double seconds, std::int64_t forward, int batch);
  void Complete();
  void Fail(const Status& status);

 private:
  RunningJob(std::shared_ptr<Job> job, std::shared_ptr<const model::LladaModel> model,
             std::unique_ptr<sampler::StepSampler> sampler, const RunContext& context);

  void EstimateNext();

  std::shared_ptr<Job> job_;
  std::shared_ptr<const model::LladaModel> model_;
  std::unique_ptr<sampler::StepSampler> sampler_;
  RunContext context_;
  Clock::time_point start_;
  telemetry::Span span_;
  telemetry::BlockSpans blocks_;
  std::vector<double> step_seconds_;
  std::vector<std::vector<std::optional<sampler::TokenLogprob>>> logprobs_;  // params.logprobs: per position
  // params.prompt_logprobs: scored first (scorer_ set until done), then sent with the first step
  // and the completion.
  std::unique_ptr<sampler::PromptScorer> scorer_;
  double scoring_seconds_ = 0;
  std::vector<std::pair<std::int64_t, sampler::TokenLogprob>> prompt_logprobs_;
  bool prompt_logprobs_sent_ = false;
  // params.likelihood: estimated after the prompt's scoring (estimator_ set until done).
  std::unique_ptr<sampler::LikelihoodEstimator> estimator_;
  double likelihood_seconds_ = 0;
  std::optional<sampler::LikelihoodResult> likelihood_;
  int largest_batch_ = 1;
};

}  // namespace unmask::executor
