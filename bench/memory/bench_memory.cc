// The memory model (common/fitting) against measured peaks: for each request size, one child
// process loads the model, touches every weight page, runs a one-token warm-up generation (so
// that math-library buffers and thread pools are not counted as activations), resets its peak
// RSS, runs ONE generation (stopped after --steps-run steps: every step of the reference
// allocates the same, and the fill step of the cache modes is their first) and reports its peak
// RSS (VmHWM) minus its RSS before the generation. The parent, which never touches LibTorch
// before forking, compares that with the predicted peak (EstimateRequest(...).peak) and prints a
// markdown table; --doc replaces the section "memory" of docs/benchmarks.md. Every case is
// measured twice: with glibc's default allocator settings, and with a fixed M_MMAP_THRESHOLD
// (--mmap-threshold, 1 MiB) so that freed tensors leave the RSS at once and the figure shows
// the tensors alone.
//
//   bench_memory [--model DIR] [--steps-run 2] [--mmap-threshold BYTES] [--quick] [--filter TEXT]
//                [--doc docs/benchmarks.md]
// Without --model a random LLaDA-layout model (d_model 256, 4 layers, 4 heads, MLP 768, vocab
// 126464: the vocabulary dominates the logits) is written to a temp directory first.
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include <ATen/ATen.h>

#include "bench/common/bench_compute.h"
#include "bench/common/temp_model.h"
#include "bench/common/bench_report.h"
#include "common/fitting/clamp.h"
#include "common/fitting/memory_model.h"
#include "common/model/llada_model.h"
#include "common/sampler/sampler_registry.h"
#include "tools/make_model/make_model.h"

namespace {

using unmask::generation::SamplerMode;
using unmask::fitting::GenerationRequest;

struct Case {
  GenerationRequest request;  // compute_dtype_bytes 4 = fp32, 2 = bf16
  std::string note;
};

std::string PrecisionOf(const GenerationRequest& r) { return r.compute_dtype_bytes == 4 ? "fp32" : "bf16"; }

std::vector<Case> Cases(bool quick) {
  std::vector<Case> out;
  auto add = [&](SamplerMode sampler, int dtype, std::int64_t batch, std::int64_t prompt, std::int64_t gen,
                 const std::string& note = "", double temperature = 0, double cfg = 0, std::int64_t chunk = 0) {
    GenerationRequest r;
    r.params.sampler = sampler;
    r.compute_dtype_bytes = dtype;
    r.batch = batch;
    r.prompt_length = prompt;
    r.params.gen_length = gen;
    r.params.block_length = std::min<std::int64_t>(32, gen);
    r.params.steps = gen;
    r.params.temperature = temperature;
    r.params.cfg_scale = cfg;
    r.params.attention_query_chunk = chunk;
    out.push_back({r, note});
  };
  for (int dtype : {4, 2}) {
    for (SamplerMode sampler : {SamplerMode::kReference, SamplerMode::kDualCache}) {
      for (std::int64_t gen : quick ? std::vector<std::int64_t>{64, 256} : std::vector<std::int64_t>{64, 128, 256}) {
        for (std::int64_t batch : {1, 4}) add(sampler, dtype, batch, 32, gen);
      }
    }
  }
  add(SamplerMode::kReference, 4, 1, 32, 128, "temperature 0.7", 0.7);
  add(SamplerMode::kReference, 4, 1, 32, 128, "cfg 1.0", 0, 1.0);
  add(SamplerMode::kBlockLogits, 4, 4, 32, 256, "");
  add(SamplerMode::kDualCache, 4, 1, 1024, 64, "long prompt");
  add(SamplerMode::kDualCache, 4, 1, 1024, 64, "long prompt, chunk 128", 0, 0, 128);
  add(SamplerMode::kDualCache, 2, 2, 2048, 64, "long prompt");
  return out;
}

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

// Faults in every weight page (zero-copy bf16 views of the mapped checkpoint are not resident
// until read), so that the baseline holds all of the weights.
void TouchWeights(const unmask::model::LladaModel& m) {
  const auto& w = m.weights();
  volatile double sink = w.wte.sum().item<double>() + w.ln_f.sum().item<double>() + w.lm_head.weight().sum().item<double>();
  for (const auto& b : w.blocks) {
    for (const auto* l : {&b.q_proj, &b.k_proj, &b.v_proj, &b.attn_out, &b.ff_proj, &b.up_proj, &b.ff_out})
      sink = sink + l->weight().sum().item<double>();
    sink = sink + b.attn_norm.sum().item<double>() + b.ff_norm.sum().item<double>();
  }
}

nlohmann::json RunOne(const std::string& dir, const GenerationRequest& r, int steps_run, long mmap_threshold) {
  using namespace unmask;
  // A fixed threshold turns off glibc's dynamic one, under which freed blocks of up to 32 MiB
  // stay in the heap (resident) after their tensors are gone.
  if (mmap_threshold > 0 && ::mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_threshold)) != 1)
    return {{"error", "mallopt(M_MMAP_THRESHOLD) failed"}};
  model::ModelOptions opts;
  opts.precision = r.compute_dtype_bytes == 4 ? model::Precision::kFloat32 : model::Precision::kBFloat16;
  opts.attention_query_chunk = r.params.attention_query_chunk;
  auto m = model::LladaModel::Load(dir, opts);
  if (!m.ok()) return {{"error", m.status().ToString()}};
  TouchWeights(**m);
  const std::uint64_t loaded = bench::CurrentRssBytes();
  const generation::SamplerMode mode = r.params.sampler;

  sampler::PromptBatch warm_prompt;
  warm_prompt.ids = Prompts(1, 1);
  generation::GenerationParams warm;
  warm.gen_length = warm.block_length = warm.steps = 1;
  warm.mask_id = (*m)->config().mask_token_id;
  warm.temperature = r.params.temperature;
  warm.cfg_scale = r.params.cfg_scale;
  (void)sampler::Generate(mode, **m, warm_prompt, warm);
  const bool reset = ResetPeakRss();
  const std::uint64_t baseline = bench::CurrentRssBytes();

  sampler::PromptBatch prompts;
  prompts.ids = Prompts(r.batch, r.prompt_length);
  generation::GenerationParams p;
  p.gen_length = r.params.gen_length;
  p.block_length = r.params.block_length;
  p.steps = r.params.steps;
  p.temperature = r.params.temperature;
  p.cfg_scale = r.params.cfg_scale;
  p.mask_id = (*m)->config().mask_token_id;
  int seen = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto result = sampler::Generate(mode, **m, prompts, p, {}, [&](const sampler::StepEvent&) { return ++seen < steps_run; });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!result.ok() && result.status().code() != StatusCode::kCancelled) return {{"error", result.status().ToString()}};
  const std::uint64_t peak = bench::PeakRssBytes();
  return {{"loaded_rss", loaded}, {"baseline_rss", baseline}, {"peak_rss", peak}, {"hwm_reset", reset},
          {"measured", peak > baseline ? peak - baseline : 0}, {"steps", seen}, {"seconds", seconds}};
}

nlohmann::json RunInChild(const std::string& dir, const GenerationRequest& r, int steps_run, long mmap_threshold) {
  int fds[2];
  if (::pipe(fds) != 0) return {{"error", "pipe failed"}};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const std::string out = RunOne(dir, r, steps_run, mmap_threshold).dump();
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

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir, doc, filter;
  int steps_run = 2;
  long mmap_threshold = 1 << 20;
  bool quick = false;
  CLI::App app{"bench_memory: predicted vs measured activation peaks"};
  app.add_option("--model", model_dir, "checkpoint directory (default: a random model in a temp dir)");
  app.add_option("--steps-run", steps_run, "denoising steps run per generation before it is stopped");
  app.add_option("--mmap-threshold", mmap_threshold,
                 "M_MMAP_THRESHOLD of the second measurement (bytes; 0: measure only glibc's default)");
  app.add_flag("--quick", quick, "fewer request sizes");
  app.add_option("--filter", filter, "only cases whose 'sampler precision note' contains this");
  app.add_option("--doc", doc, "markdown file whose bench:memory section is replaced");
  CLI11_PARSE(app, argc, argv);
  (void)unmask::bench::SetUpComputeOrExit();

  std::unique_ptr<unmask::bench::TempModel> temp;
  if (model_dir.empty()) {
    auto made = unmask::bench::TempModel::Make("memory", unmask::bench::RandomModel(256, 4, 4, 768));
    if (!made.ok()) {
      std::cerr << made.status().ToString() << "\n";
      return 1;
    }
    temp = std::move(*made);
    model_dir = temp->dir();
  }
  auto config = unmask::checkpoint::LladaConfig::FromFile(model_dir + "/config.json");
  if (!config.ok()) {
    std::cerr << config.status().ToString() << "\n";
    return 1;
  }

  const bool second = mmap_threshold > 0;
  const std::string threshold = unmask::fitting::HumanBytes(static_cast<std::uint64_t>(mmap_threshold));
  std::ostringstream md;
  md << "Predicted activation peak (`unmask::fitting::EstimateRequest(...).peak`, weights excluded) against "
        "the measured one: peak RSS (VmHWM) of a child process during one generation minus its RSS just "
        "before it (model loaded, every weight page touched, a one-token warm-up run, VmHWM reset), with "
        "glibc's default allocator settings"
     << (second ? " and with `mallopt(M_MMAP_THRESHOLD, " + threshold + ")`" : std::string()) << ". Generations stop after "
     << steps_run << " steps (each reference step allocates the same; the cache modes peak in the fill step, "
     << "their first). block_length 32, steps = gen_length, greedy unless noted. Model: "
     << config->parameter_count() / 1e6 << " M parameters (d_model " << config->d_model << ", " << config->n_layers
     << " layers, " << config->n_heads << " heads, MLP " << config->mlp_hidden_size << ", vocab "
     << config->embedding_size << "), bf16 on disk.\n\n"
     << "| sampler | precision | batch | prompt | gen | note | predicted | predicted phase | measured | ratio |"
     << (second ? " measured, mmap threshold " + threshold + " | ratio |" : std::string()) << "\n"
     << "|---|---|---|---|---|---|---|---|---|---|" << (second ? "---|---|" : "") << "\n";
  int failures = 0;
  double worst_default = 1.0, worst_fixed = 1.0;
  auto deviation = [](double ratio) { return std::max(ratio, 1.0 / ratio); };
  for (const Case& c : Cases(quick)) {
    const std::string sampler_name = unmask::generation::SamplerModeName(c.request.params.sampler);
    const std::string label = sampler_name + " " + PrecisionOf(c.request) + " " + c.note;
    if (!filter.empty() && label.find(filter) == std::string::npos) continue;
    const unmask::fitting::RequestShape shape = unmask::fitting::ShapeOf(c.request);
    const unmask::fitting::MemoryEstimate e = unmask::fitting::EstimateRequest(*config, shape);
    char row[640];
    std::snprintf(row, sizeof(row), "| %s | %s | %lld | %lld | %lld | %s | %s | %s |", sampler_name.c_str(),
                  PrecisionOf(c.request).c_str(), static_cast<long long>(c.request.batch),
                  static_cast<long long>(c.request.prompt_length), static_cast<long long>(c.request.params.gen_length),
                  c.note.c_str(), unmask::fitting::HumanBytes(e.peak).c_str(), e.peak_phase.c_str());
    std::string line = row;
    bool failed = false;
    for (long t : second ? std::vector<long>{0, mmap_threshold} : std::vector<long>{0}) {
      const auto r = RunInChild(model_dir, c.request, steps_run, t);
      if (r.contains("error")) {
        std::cerr << label << ": " << r["error"] << "\n";
        failed = true;
        break;
      }
      const std::uint64_t measured = r["measured"].get<std::uint64_t>();
      const double ratio = static_cast<double>(measured) / static_cast<double>(e.peak);
      (t == 0 ? worst_default : worst_fixed) = std::max(t == 0 ? worst_default : worst_fixed, deviation(ratio));
      std::snprintf(row, sizeof(row), " %s | %.2f |", unmask::fitting::HumanBytes(measured).c_str(), ratio);
      line += row;
      std::cerr << label << " mmap threshold " << t << ": baseline "
                << unmask::fitting::HumanBytes(r["baseline_rss"].get<std::uint64_t>()) << ", hwm reset "
                << r["hwm_reset"] << ", " << r["seconds"] << " s\n";
    }
    if (failed) {
      ++failures;
      continue;
    }
    md << line << "\n";
    std::cerr << line << "\n";
  }
  char summary[256];
  std::snprintf(summary, sizeof(summary), "\nLargest deviation either way: %.2fx with glibc's defaults", worst_default);
  md << summary;
  if (second) {
    std::snprintf(summary, sizeof(summary), ", %.2fx with the fixed mmap threshold", worst_fixed);
    md << summary;
  }
  md << ".\n\nMachine: " << unmask::bench::MachineDescription() << ". Command: `"
     << unmask::bench::CommandLine(argc, argv) << "`\n";
  std::cout << md.str();
  if (!doc.empty() && !unmask::bench::ReplaceDocSection(doc, "memory", md.str())) {
    std::cerr << "cannot write " << doc << "\n";
    ++failures;
  }
  return failures ? 1 : 0;
}
