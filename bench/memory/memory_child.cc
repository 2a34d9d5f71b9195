#include "bench/memory/memory_child.h"

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include <ATen/ATen.h>

#include "bench/common/bench_report.h"
#include "common/model/allocator.h"
#include "common/model/llada_model.h"
#include "common/sampler/likelihood.h"
#include "common/sampler/prompt_logprobs.h"
#include "common/sampler/sampler_registry.h"

namespace unmask::bench::memory {
namespace {

// Ordinary token ids (below LLaDA's special tokens), different per row.
std::vector<std::vector<std::int64_t>> Prompts(std::int64_t batch, std::int64_t length) {
  std::vector<std::vector<std::int64_t>> rows(batch);
  for (std::int64_t r = 0; r < batch; ++r)
    for (std::int64_t i = 0; i < length; ++i) rows[r].push_back((1000 + 37 * i + 11 * r) % 100000);
  return rows;
}

// Resets VmHWM to the current RSS (Linux >= 4.0); false when the kernel refuses.
bool ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

double Touch(const at::Tensor& t) { return t.defined() ? t.sum().item<double>() : 0.0; }
double Touch(const model::Linear& l) { return Touch(l.weight()); }
double Touch(const model::SwiGluWeights& w) { return Touch(w.gate_proj) + Touch(w.up_proj) + Touch(w.down_proj); }

// A MoE layer's router (in whichever form the architecture keeps it), experts and shared expert.
double TouchMoe(const model::MoeWeights& m) {
  double sum = Touch(m.router_fp32) + Touch(m.expert_bias);
  if (!m.router_fp32.defined()) sum += Touch(m.router);
  for (const auto& e : m.experts) sum += Touch(e);
  if (m.has_shared) sum += Touch(m.shared);
  return sum;
}

// Faults in every weight page (zero-copy bf16 views of the mapped checkpoint are not resident
// until read), so that the baseline holds all of the weights.
void TouchWeights(const model::LladaModel& m) {
  const auto& w = m.weights();
  volatile double sink = Touch(w.wte) + Touch(w.ln_f) + Touch(w.lm_head);
  for (const auto& b : w.blocks) {
    double sum = Touch(b.q_proj) + Touch(b.k_proj) + Touch(b.v_proj) + Touch(b.attn_out) + Touch(b.attn_norm) +
                 Touch(b.ff_norm) + Touch(b.q_norm) + Touch(b.k_norm) + Touch(b.q_bias) + Touch(b.k_bias) +
                 Touch(b.v_bias);
    sum += b.moe.empty() ? Touch(b.ff_proj) + Touch(b.up_proj) + Touch(b.ff_out) : TouchMoe(b.moe);
    sink = sink + sum;
  }
}

generation::GenerationParams ParamsOf(const fitting::GenerationRequest& r, std::int64_t mask_id) {
  generation::GenerationParams p = r.params;
  p.mask_id = mask_id;
  return p;
}

nlohmann::json RunOne(const std::string& dir, const fitting::GenerationRequest& r, std::int64_t suffix, int steps_run,
                      long mmap_threshold) {
  // 0: glibc's malloc as the executor sets it (allocator.h; UNMASK_MALLOC=default leaves glibc's
  // defaults). Else a fixed threshold alone, under which freed tensors leave the RSS at once.
  std::string allocator = "fixed mmap threshold";
  if (mmap_threshold == 0) {
    allocator = model::ConfigureAllocator();
  } else if (::mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_threshold)) != 1) {
    return {{"error", "mallopt(M_MMAP_THRESHOLD) failed"}};
  }
  model::ModelOptions opts;
  opts.precision = r.compute_dtype_bytes == 4 ? model::Precision::kFloat32 : model::Precision::kBFloat16;
  opts.attention_query_chunk = r.params.attention_query_chunk;
  auto m = model::LladaModel::Load(dir, opts);
  if (!m.ok()) return {{"error", m.status().ToString()}};
  TouchWeights(**m);
  const std::uint64_t loaded = CurrentRssBytes();
  const generation::SamplerMode mode = r.params.sampler;

  sampler::PromptBatch warm_prompt;
  warm_prompt.ids = Prompts(1, 1);
  generation::GenerationParams warm = ParamsOf(r, (*m)->config().mask_token_id);
  warm.gen_length = warm.block_length = warm.steps = 1;
  warm.attention_query_chunk = 0;
  (void)sampler::Generate(mode, **m, warm_prompt, warm);
  const bool reset = ResetPeakRss();
  const std::uint64_t baseline = CurrentRssBytes();

  sampler::PromptBatch prompts;
  prompts.ids = Prompts(r.batch, r.prompt_length - suffix);
  if (suffix > 0) prompts.canvas.suffix = Prompts(1, suffix)[0];
  const generation::GenerationParams p = ParamsOf(r, (*m)->config().mask_token_id);
  int seen = 0;
  const auto t0 = std::chrono::steady_clock::now();
  if (p.prompt_logprobs >= 0) {  // as the executor scores each job's prompt before its first step
    for (const auto& row : prompts.ids) {
      const auto sequence = static_cast<std::int64_t>(row.size()) + suffix + p.gen_length;
      (void)sampler::PromptLogprobs(**m, row, sampler::ScoringFor(**m, p, sequence));
    }
    model::ReleaseFreeHeap();  // as RunningJob does once the prompt is scored
  }
  if (p.likelihood) {  // as the executor runs a likelihood job: rows_per_forward sequences a forward
    const auto& row = prompts.ids[0];
    const auto sequence = static_cast<std::int64_t>(row.size()) + p.gen_length;
    const std::int64_t rows = std::max<std::int32_t>(1, p.likelihood->rows_per_forward);
    (void)sampler::EstimateLikelihood(**m, row, p, sequence * rows * (p.cfg_scale > 0 ? 2 : 1));
    const std::uint64_t peak = PeakRssBytes();
    return {{"loaded_rss", loaded}, {"baseline_rss", baseline}, {"peak_rss", peak}, {"hwm_reset", reset},
            {"measured", peak > baseline ? peak - baseline : 0}, {"steps", 0},
            {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()},
            {"allocator", allocator}};
  }
  auto result = sampler::Generate(mode, **m, prompts, p, {}, [&](const sampler::StepEvent&) {
    return ++seen < steps_run || steps_run < 1;
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!result.ok() && result.status().code() != StatusCode::kCancelled) return {{"error", result.status().ToString()}};
  const std::uint64_t peak = PeakRssBytes();
  return {{"loaded_rss", loaded}, {"baseline_rss", baseline}, {"peak_rss", peak}, {"hwm_reset", reset},
          {"measured", peak > baseline ? peak - baseline : 0}, {"steps", seen}, {"seconds", seconds},
          {"allocator", allocator}};
}

}  // namespace

nlohmann::json RunInChild(const std::string& dir, const fitting::GenerationRequest& r, std::int64_t suffix, int steps_run,
                          long mmap_threshold) {
  int fds[2];
  if (::pipe(fds) != 0) return {{"error", "pipe failed"}};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const std::string out = RunOne(dir, r, suffix, steps_run, mmap_threshold).dump();
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) > 0) text.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return {{"error", "child failed (status " + std::to_string(status) + ")"}};
  return j;
}

}  // namespace unmask::bench::memory
