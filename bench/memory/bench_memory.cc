// The memory model (common/fitting) against measured peaks: for each request size, one child
// process loads the model, touches every weight page, runs a one-token warm-up generation (so
// that math-library buffers and thread pools are not counted as activations), resets its peak
// RSS, runs ONE generation (stopped after --steps-run steps: every step of the reference
// allocates the same, and the fill step of the cache modes is their first; LLaDA2's sampler runs
// to the end, its window grows block by block) and reports its peak RSS (VmHWM) minus its RSS
// before the generation (memory_child.h). The parent, which never touches LibTorch before
// forking, compares that with the predicted peak (EstimateRequest(...).peak) and prints one
// markdown table per model (memory_cases.h: dense LLaDA, LLaDA-MoE, LLaDA2, Dream); --doc replaces the
// section "memory" of docs/benchmarks.md. Every case is measured twice: with glibc's malloc as the
// executor sets it (common/model/allocator.h: what a user's executor holds; UNMASK_MALLOC=default
// measures glibc's defaults instead), and with a fixed M_MMAP_THRESHOLD alone (--mmap-threshold,
// 1 MiB) so that freed tensors leave the RSS at once and the figure shows the tensors alone.
//
//   bench_memory [--model DIR] [--models dense,llada-moe,llada2,dream] [--steps-run 2]
//                [--mmap-threshold BYTES] [--quick] [--filter TEXT] [--predict-only] [--skip-weights]
//                [--doc docs/benchmarks.md]
// After each model's rows, a table of its weight segment at bf16, int8 and int4: WeightBytes
// against the segment the loader writes (memory_weights.h).
// Random checkpoints of each architecture are written to a temp directory first (--model: the
// dense cases run on that checkpoint instead).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <vector>

#include "bench/common/bench_compute.h"
#include "bench/common/bench_report.h"
#include "bench/common/temp_model.h"
#include "bench/memory/memory_cases.h"
#include "bench/memory/memory_child.h"
#include "bench/memory/memory_weights.h"
#include "common/fitting/memory_model.h"

namespace {

using namespace unmask;
using bench::memory::Case;
using bench::memory::ModelKind;

struct Args {
  std::string model_dir, doc, filter, models = "dense,llada-moe,llada2,dream";
  int steps_run = 2;
  long mmap_threshold = 1 << 20;
  bool quick = false, predict_only = false, skip_weights = false;
  bool second() const { return mmap_threshold > 0 && !predict_only; }
};

// The largest deviation either way, with the executor's malloc settings and the fixed mmap threshold.
struct Totals {
  double worst_default = 1.0, worst_fixed = 1.0, worst_weights = 1.0;
  int failures = 0;
};

std::string PrecisionOf(const fitting::GenerationRequest& r) { return r.compute_dtype_bytes == 4 ? "fp32" : "bf16"; }
std::string Str(std::int64_t v) { return std::to_string(v); }

std::string Label(const Case& c) {
  return std::string(bench::memory::ModelKindName(c.model)) + " " +
         generation::SamplerModeName(c.request.params.sampler) + " " + PrecisionOf(c.request) + " " + c.note;
}

// "LLaDA-MoE, 94.0 M parameters (d_model 256, 4 layers, 4 heads, 64 experts of MLP 128, top-8, ...)".
std::string ModelLine(const checkpoint::LladaConfig& c) {
  char params[32];
  std::snprintf(params, sizeof(params), "%.1f M parameters", c.parameter_count() / 1e6);
  std::string shape = "d_model " + Str(c.d_model) + ", " + Str(c.n_layers) + " layers, " + Str(c.n_heads) + " heads";
  if (c.n_kv_heads != c.n_heads) shape += " (" + Str(c.n_kv_heads) + " KV heads)";
  if (c.qkv_bias) shape += ", q/k/v biases";
  const auto& m = c.moe;
  if (m.num_experts > 0) {
    shape += ", " + Str(m.num_experts) + " experts of MLP " + Str(m.expert_hidden_size);
    if (m.n_group > 1) shape += " in " + Str(m.n_group) + " groups (" + Str(m.topk_group) + " kept)";
    shape += ", top-" + Str(m.top_k);
    if (m.shared_hidden_size > 0) shape += ", a shared expert of MLP " + Str(m.shared_hidden_size);
    std::int64_t dense = 0;
    for (std::int64_t i = 0; i < c.n_layers; ++i) dense += m.is_moe_layer(i) ? 0 : 1;
    if (dense > 0) shape += ", " + Str(dense) + " dense layer(s) of MLP " + Str(c.mlp_hidden_size);
  } else {
    shape += ", MLP " + Str(c.mlp_hidden_size);
  }
  return std::string(checkpoint::ArchitectureName(c.architecture)) + ", " + params + " (" + shape + ", vocab " +
         Str(c.embedding_size) + "), bf16 on disk";
}

std::string Intro(const Args& a) {
  const std::string threshold = fitting::HumanBytes(static_cast<std::uint64_t>(a.mmap_threshold));
  std::ostringstream md;
  md << "Predicted activation peak (`unmask::fitting::EstimateRequest(...).peak`, weights excluded) against "
        "the measured one: peak RSS (VmHWM) of a child process during one generation minus its RSS just "
        "before it (model loaded, every weight page touched, a one-token warm-up run, VmHWM reset), with "
        "glibc's malloc as the executor sets it (`common/model/allocator.h`: mmap threshold 4 MiB, trim "
        "threshold 32 MiB)"
     << (a.second() ? " and with `mallopt(M_MMAP_THRESHOLD, " + threshold + ")`" : std::string())
     << ". Generations stop after " << a.steps_run
     << " steps (each reference step allocates the same; the cache modes peak in the fill step, their first), "
        "except LLaDA2's sampler, which runs to the end (its window grows block by block, the last block's first "
        "step is its peak; steps are per block there, 4). block_length 32, steps = gen_length, greedy unless "
        "noted (Dream: its default alg, entropy; `dream` has no blocks, block_length = gen_length; the "
        "cache modes' first step is the block's refresh call, the second its first inner call). One table "
        "per model, each a random checkpoint.\n";
  return md.str();
}

std::string TableHeader(const Args& a) {
  const std::string threshold = fitting::HumanBytes(static_cast<std::uint64_t>(a.mmap_threshold));
  std::string h = "| sampler | precision | batch | prompt | gen | note | predicted | predicted phase |";
  std::string rule = "|---|---|---|---|---|---|---|---|";
  if (!a.predict_only) {
    h += " measured | ratio |";
    rule += "---|---|";
  }
  if (a.second()) {
    h += " measured, mmap threshold " + threshold + " | ratio |";
    rule += "---|---|";
  }
  return h + "\n" + rule + "\n";
}

// The measured columns of one case, or false (printed) when a child failed.
bool Measure(const std::string& dir, const Case& c, const fitting::MemoryEstimate& e, const Args& a, Totals& t,
             std::string& line) {
  auto deviation = [](double ratio) { return std::max(ratio, 1.0 / ratio); };
  const int steps_run = c.steps_run == 0 ? a.steps_run : c.steps_run;
  for (long threshold : a.second() ? std::vector<long>{0, a.mmap_threshold} : std::vector<long>{0}) {
    const auto r = bench::memory::RunInChild(dir, c.request, c.suffix, steps_run, threshold);
    if (r.contains("error")) {
      std::cerr << Label(c) << ": " << r["error"] << "\n";
      return false;
    }
    const std::uint64_t measured = r["measured"].get<std::uint64_t>();
    const double ratio = static_cast<double>(measured) / static_cast<double>(e.peak);
    double& worst = threshold == 0 ? t.worst_default : t.worst_fixed;
    worst = std::max(worst, deviation(ratio));
    char cell[96];
    std::snprintf(cell, sizeof(cell), " %s | %.2f |", fitting::HumanBytes(measured).c_str(), ratio);
    line += cell;
    std::cerr << Label(c) << " mmap threshold " << threshold << ": baseline "
              << fitting::HumanBytes(r["baseline_rss"].get<std::uint64_t>()) << ", hwm reset " << r["hwm_reset"]
              << ", " << r["steps"] << " steps, " << r["seconds"] << " s; " << r["allocator"] << "\n";
  }
  return true;
}

std::string Row(const Case& c, const fitting::MemoryEstimate& e) {
  const auto& r = c.request;
  char row[640];
  std::snprintf(row, sizeof(row), "| %s | %s | %lld | %lld | %lld | %s | %s | %s |",
                generation::SamplerModeName(r.params.sampler), PrecisionOf(r).c_str(),
                static_cast<long long>(r.batch), static_cast<long long>(r.prompt_length),
                static_cast<long long>(r.params.gen_length), c.note.c_str(), fitting::HumanBytes(e.peak).c_str(),
                e.peak_phase.c_str());
  return row;
}

// The table of one model: its random checkpoint (or --model for the dense one) and its cases.
std::string ModelSection(ModelKind kind, const std::vector<Case>& cases, const Args& a, Totals& t) {
  std::unique_ptr<bench::TempModel> temp;
  std::string dir = kind == ModelKind::kDense ? a.model_dir : "";
  if (dir.empty()) {
    auto made = bench::TempModel::Make(std::string("memory-") + bench::memory::ModelKindName(kind),
                                       bench::memory::ModelOptionsFor(kind));
    if (!made.ok()) {
      std::cerr << made.status().ToString() << "\n";
      ++t.failures;
      return "";
    }
    temp = std::move(*made);
    dir = temp->dir();
  }
  auto config = checkpoint::LladaConfig::FromFile(dir + "/config.json");
  if (!config.ok()) {
    std::cerr << config.status().ToString() << "\n";
    ++t.failures;
    return "";
  }
  std::ostringstream md;
  md << "\n**" << bench::memory::ModelKindName(kind) << "**: " << ModelLine(*config) << ".\n\n" << TableHeader(a);
  for (const Case& c : cases) {
    const fitting::MemoryEstimate e = fitting::EstimateRequest(*config, fitting::ShapeOf(c.request));
    std::string line = Row(c, e);
    if (!a.predict_only && !Measure(dir, c, e, a, t, line)) {
      ++t.failures;
      continue;
    }
    md << line << "\n";
    std::cerr << line << "\n";
  }
  if (!a.skip_weights)
    md << bench::memory::WeightsTable(dir, *config, {"bf16", "int8", "int4"}, t.worst_weights, t.failures);
  return md.str();
}

bool Selected(const Case& c, const Args& a) {
  const std::string name = bench::memory::ModelKindName(c.model);
  if (("," + a.models + ",").find("," + name + ",") == std::string::npos) return false;
  return a.filter.empty() || Label(c).find(a.filter) != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"bench_memory: predicted vs measured activation peaks"};
  app.add_option("--model", a.model_dir, "checkpoint directory for the dense cases (default: a random model)");
  app.add_option("--models", a.models, "comma-separated models to measure: dense, llada-moe, llada2, dream");
  app.add_option("--steps-run", a.steps_run, "denoising steps run per generation before it is stopped");
  app.add_option("--mmap-threshold", a.mmap_threshold,
                 "M_MMAP_THRESHOLD of the second measurement (bytes; 0: only the first, the executor's settings)");
  app.add_flag("--quick", a.quick, "fewer request sizes");
  app.add_option("--filter", a.filter, "only cases whose 'model sampler precision note' contains this");
  app.add_flag("--predict-only", a.predict_only, "print the predictions without measuring");
  app.add_flag("--skip-weights", a.skip_weights, "leave out the weight segments (WeightBytes vs the loader's)");
  app.add_option("--doc", a.doc, "markdown file whose bench:memory section is replaced");
  CLI11_PARSE(app, argc, argv);
  // glibc's defaults here; each child sets its own (the executor's for the first measurement, the
  // fixed --mmap-threshold for the second).
  (void)bench::SetUpComputeOrExit(0, "auto", /*tune_allocator=*/false);

  Totals t;
  std::ostringstream md;
  md << Intro(a);
  const std::vector<Case> cases = bench::memory::Cases(a.quick);
  for (ModelKind kind : bench::memory::AllModelKinds()) {
    std::vector<Case> mine;
    for (const Case& c : cases)
      if (c.model == kind && Selected(c, a)) mine.push_back(c);
    if (!mine.empty()) md << ModelSection(kind, mine, a, t);
  }
  char summary[256];
  std::snprintf(summary, sizeof(summary), "\nLargest deviation either way: %.2fx with the executor's malloc settings", t.worst_default);
  md << summary;
  if (a.second()) {
    std::snprintf(summary, sizeof(summary), ", %.2fx with the fixed mmap threshold", t.worst_fixed);
    md << summary;
  }
  if (!a.skip_weights) {
    std::snprintf(summary, sizeof(summary), "; weights: %.4fx", t.worst_weights);
    md << summary;
  }
  md << ".\n\nMachine: " << bench::MachineDescription() << ". Command: `" << bench::CommandLine(argc, argv) << "`\n";
  std::cout << md.str();
  if (!a.doc.empty() && !bench::ReplaceDocSection(a.doc, "memory", md.str())) {
    std::cerr << "cannot write " << a.doc << "\n";
    ++t.failures;
  }
  return t.failures ? 1 : 0;
}
