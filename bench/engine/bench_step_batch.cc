// bench_step_batch (issue 28): what step-level batching buys the engine, the way the serving
// benchmark's closed loop uses it. The same --requests generations of different prompt lengths and
// max_tokens run (a) one after the other, each driven alone (sampler::RunSteps), and (b) with N
// running at once, one packed forward per step (sampler::StepTogether, as the executor runs
// them): a generation that ends leaves at that step and the next one in
// the queue joins at the next, so N stay running until the queue is empty. Both give the same
// tokens (checked); the table gives tokens/s, the speed-up, and where a batched step's time goes:
// the packed forward, and the jobs' own per-step work (LM head, confidences, top-k, events).
// Rounds alternate the two orders so that load from other processes hits both alike; figures
// are medians.
//
//   bench_step_batch --model models/unmask-kjv [--jobs 1,4,8] [--requests 24] [--sampler dual_cache+threshold]
//                    [--max-tokens 32,64,96] [--precision auto] [--threads 0] [--rounds 3] [--doc docs/benchmarks.md]
//                    [--device cuda [--cuda-graphs] [--no-fused-kernels]]   (tools/gpu/measure.sh)
//   bench_step_batch --profile-ops [--jobs 1,8]   (where a batched step's time goes, by ATen operator)
//
// Prompts are random token ids (seeded; lengths 8 to 40), so the text means nothing; the
// trained model's confidence on them decides how many steps the threshold rule takes, the same
// alone and batched.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "bench/common/bench_compute.h"
#include "bench/common/bench_report.h"
#include "bench/common/op_profile.h"
#include "common/model/cpu_features.h"
#include "common/model/llada_model.h"
#include "common/sampler/step_sampler.h"

namespace {

using namespace unmask;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string model = "models/unmask-kjv", jobs = "1,4,8", sampler = "dual_cache+threshold", max_tokens = "32,64,96";
  std::string precision = "auto", doc, device = "cpu";
  int rounds = 3, requests = 24, threads = 0;
  bool profile_ops = false, cuda_graphs = false, fused_kernels = true;
};

std::vector<std::int64_t> Ints(const std::string& list) {
  std::vector<std::int64_t> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stoll(item));
  return out;
}

struct Request {
  sampler::PromptBatch prompts;
  generation::GenerationParams params;
};

std::vector<Request> Requests(const Args& a, const model::LladaModel& m, int n) {
  std::mt19937_64 rng(1234);
  const auto lengths = Ints(a.max_tokens);
  std::vector<Request> out;
  for (int i = 0; i < n; ++i) {
    Request r;
    std::vector<std::int64_t> ids(8 + rng() % 33);
    for (auto& id : ids) id = 10 + static_cast<std::int64_t>(rng() % (m.config().embedding_size - 10));
    r.prompts.ids = {ids};
    r.params.sampler = *generation::ParseSamplerMode(a.sampler);
    generation::ResolveLengths(lengths[i % lengths.size()], std::nullopt, std::nullopt, r.params);
    generation::WithModelTokens(m.config(), r.params);
    out.push_back(r);
  }
  return out;
}

struct Timing {
  double seconds = 0, forward = 0, own = 0;
  std::int64_t tokens = 0, steps = 0, jobs_in_steps = 0;
  std::vector<std::vector<std::int64_t>> outputs;
};

Timing Alone(const model::LladaModel& m, const std::vector<Request>& requests) {
  Timing t;
  const auto start = Clock::now();
  for (const auto& r : requests) {
    auto s = sampler::StartStepSampler(m, r.prompts, r.params);
    auto result = sampler::RunSteps(m, **s, {}, "bench");
    t.outputs.push_back(result->output[0]);
    t.tokens += r.params.gen_length;
    t.steps += result->steps_run;
  }
  t.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return t;
}

// `requests` with at most `concurrency` of them running at once, one packed forward per step.
Timing Together(const model::LladaModel& m, const std::vector<Request>& requests, std::size_t concurrency) {
  Timing t;
  const auto start = Clock::now();
  std::vector<std::unique_ptr<sampler::StepSampler>> samplers(requests.size());
  std::vector<std::size_t> running;  // indices into requests
  std::size_t next = 0;
  for (;;) {
    while (running.size() < concurrency && next < requests.size()) {
      samplers[next] = *sampler::StartStepSampler(m, requests[next].prompts, requests[next].params);
      running.push_back(next++);
    }
    if (running.empty()) break;
    std::vector<sampler::StepSampler*> batch;
    for (std::size_t i : running) batch.push_back(samplers[i].get());
    sampler::StepTiming timing;
    for (const auto& event : sampler::StepTogether(m, batch, &timing)) {
      if (!event.ok()) throw std::runtime_error(event.status().ToString());
    }
    t.forward += timing.forward_seconds;
    t.own += timing.finish_seconds;
    t.jobs_in_steps += static_cast<std::int64_t>(running.size());
    ++t.steps;
    running.erase(std::remove_if(running.begin(), running.end(), [&](std::size_t i) { return !samplers[i]->running(); }),
                  running.end());
  }
  t.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (std::size_t i = 0; i < samplers.size(); ++i) {
    t.outputs.push_back(samplers[i]->Result().output[0]);
    t.tokens += requests[i].params.gen_length;
  }
  return t;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"Step-level batching: N generations alone one after the other vs in one packed forward per step"};
  app.add_option("--model", a.model)->capture_default_str();
  app.add_option("--jobs", a.jobs, "generations running at once, comma-separated")->capture_default_str();
  app.add_option("--requests", a.requests, "generations per run")->capture_default_str();
  app.add_option("--threads", a.threads, "intra-op threads (0: the usable cores)")->capture_default_str();
  app.add_option("--sampler", a.sampler)->capture_default_str();
  app.add_option("--max-tokens", a.max_tokens, "gen_length of job i: the list's (i mod size)th")->capture_default_str();
  app.add_option("--precision", a.precision, "auto, fp32, bf16")->capture_default_str();
  app.add_option("--rounds", a.rounds)->capture_default_str();
  app.add_option("--doc", a.doc, "markdown file whose section 'step-batch' is replaced");
  app.add_option("--device", a.device,
                 "cpu or cuda[:N]; on cuda each forward is waited for, so the forward column is the device's time")
      ->capture_default_str();
  app.add_flag("--cuda-graphs", a.cuda_graphs, "cuda: replay a generation stepping alone as CUDA graphs");
  app.add_flag("!--no-fused-kernels", a.fused_kernels,
               "cuda: ATen's operators instead of the fused elementwise kernels (model/fused_ops.h), as the engine's flag");
  app.add_flag("--profile-ops", a.profile_ops,
               "instead of the table: each --jobs count once, batched, with the time of each ATen operator");
  CLI11_PARSE(app, argc, argv);
  const std::string compute = bench::SetUpComputeOrExit(a.threads);
  c10::InferenceMode inference;

  model::ModelOptions base;
  base.device = a.device;
  base.cuda_graphs = a.cuda_graphs;
  base.fused_kernels = a.fused_kernels && a.device != "cpu";
  base.time_forwards = a.device != "cpu";
  const std::unique_ptr<model::LladaModel> loaded = bench::LoadModelOrExit(a.model, a.precision, base);
  const model::ModelOptions& options = loaded->options();
  const model::LladaModel& m = *loaded;

  std::ostringstream md;
  md << "| jobs at once | alone, one after another: tokens/s | batched: tokens/s | speed-up | batched steps | "
        "jobs per step | forward ms / step | jobs' own ms / step | same tokens |\n|---|---|---|---|---|---|---|---|---|\n";
  const auto requests = Requests(a, m, a.requests);
  if (a.profile_ops) {
    for (std::int64_t n : Ints(a.jobs)) {
      (void)Together(m, requests, static_cast<std::size_t>(n));  // warm-up
      bench::OpProfile profile;
      const Timing t = Together(m, requests, static_cast<std::size_t>(n));
      std::cout << n << " at once: " << t.tokens / t.seconds << " tokens/s, " << t.steps << " steps, forward "
                << 1e3 * t.forward / t.steps << " ms / step, jobs' own " << 1e3 * t.own / t.steps << " ms / step\n";
      profile.Print(std::cout);
    }
    return 0;
  }
  for (std::int64_t n : Ints(a.jobs)) {
    std::vector<double> alone_rate, together_rate, forward_ms, own_ms;
    bool same = true;
    std::int64_t steps = 0;
    double per_step = 0;
    for (int round = 0; round < a.rounds; ++round) {
      Timing alone, together;
      if (round % 2 == 0) {
        alone = Alone(m, requests);
        together = Together(m, requests, static_cast<std::size_t>(n));
      } else {
        together = Together(m, requests, static_cast<std::size_t>(n));
        alone = Alone(m, requests);
      }
      same = same && alone.outputs == together.outputs;
      alone_rate.push_back(alone.tokens / alone.seconds);
      together_rate.push_back(together.tokens / together.seconds);
      forward_ms.push_back(1e3 * together.forward / together.steps);
      own_ms.push_back(1e3 * together.own / together.steps);
      steps = together.steps;
      per_step = static_cast<double>(together.jobs_in_steps) / together.steps;
    }
    char row[256];
    std::snprintf(row, sizeof(row), "| %lld | %.1f | %.1f | %.2fx | %lld | %.1f | %.1f | %.1f | %s |\n",
                  static_cast<long long>(n), Median(alone_rate), Median(together_rate),
                  Median(together_rate) / Median(alone_rate), static_cast<long long>(steps), per_step, Median(forward_ms), Median(own_ms), same ? "yes" : "NO");
    md << row;
    std::cout << row << std::flush;
  }
  md << "\n" << a.requests << " generations, " << a.sampler << ", max_tokens " << a.max_tokens << ", " << model::PrecisionName(options.precision)
     << " compute on " << a.device << (a.cuda_graphs ? " with CUDA graphs" : "")
     << (options.fused_kernels ? " and the fused kernels" : "") << ", " << compute << ", medians of " << a.rounds << " rounds. Machine: " << bench::MachineDescription()
     << "; CPU flags: " << model::DescribeCpuFlags(model::HostCpuFeatures()) << ". Command: `"
     << bench::CommandLine(argc, argv) << "`.\n";
  std::cout << md.str();
  if (!a.doc.empty() && !bench::ReplaceDocSection(a.doc, "step-batch", md.str())) return 1;
  return 0;
}
