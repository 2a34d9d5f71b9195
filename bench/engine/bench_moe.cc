// bench_moe (issue 29): what computing only the routed experts buys, and what LLaDA2's block
// diffusion costs against LLaDA's reference sampler on the same tiny model.
//
// 1. One MoE layer built in memory with seeded random weights (no checkpoint): a LLaDA-MoE-like
//    layer (softmax router, --experts experts of --expert-hidden, top --top-k, a shared expert
//    with --shared) and a LLaDA2-like one (sigmoid router with expert bias, --groups groups keeping
//    --topk-group, scaling 2.5, one shared expert). Over --rows rows it times (a)
//    model::MoeForward, which runs each expert once over the rows that chose it, against (b) the
//    same layer computed densely, as a naive implementation would: every expert on every row, each
//    row's output the sum of weight x output over all experts (weight 0 for the experts it did not
//    choose), plus the shared expert. Both use the same routing (model::Route), so they compute
//    the same sums; the results are not bitwise equal (the order of the additions differs, and
//    (b) accumulates in float32), so the largest absolute difference is printed. Weights are bf16
//    and are used as the engine uses them (llada_weights.cc): float32 compute reads the bf16
//    weights in place through the few-row kernels (widened to float32 once where the gemm path is
//    the BLAS); bf16 compute runs bf16 throughout.
// 2. The tiny LLaDA2 checkpoint generating --gen-length tokens: LLaDA2's block-diffusion sampler
//    (sampler::StartLlada2StepSampler) without and with its cache of finished blocks, LLaDA2.1's
//    (token editing, its generate()'s defaults: edits above 0.9, up to 16 post steps per block,
//    cached), against LLaDA's reference mode (bidirectional attention, the whole canvas every
//    step) on the same model, prompt and block length; tokens/s and model calls.
//
// Repetitions alternate the order of what they compare, so that load from other processes hits
// both alike; figures are medians.
//
//   bench_moe [--rows 32,256,1024] [--d-model 512] [--expert-hidden 256] [--experts 64] [--top-k 8]
//             [--shared] [--groups 8] [--topk-group 4] [--reps 5] [--model tests/data/tiny-llada2]
//             [--gen-length 64] [--block-lengths 8,32] [--precision auto] [--threads 0] [--gemm auto]
//             [--doc docs/benchmarks.md]
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "bench/common/bench_compute.h"
#include "bench/common/bench_report.h"
#include "common/model/cpu_features.h"
#include "common/model/llada_model.h"
#include "common/model/moe.h"
#include "common/model/small_gemm.h"
#include "common/sampler/llada2_sampler.h"
#include "common/sampler/step_sampler.h"

namespace {

using namespace unmask;
using checkpoint::Architecture;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string rows = "32,256,1024", block_lengths = "8,32", model = "tests/data/tiny-llada2", precision = "auto";
  std::string gemm = "auto", doc;
  std::int64_t d_model = 512, expert_hidden = 256, experts = 64, top_k = 8, groups = 8, topk_group = 4;
  std::int64_t gen_length = 64, prompt_length = 16;
  double threshold = 0.95;
  bool shared = false, eos_stops = false;
  int reps = 5, threads = 0;
};

std::vector<std::int64_t> Ints(const std::string& list) {
  std::vector<std::int64_t> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stoll(item));
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Seconds(const std::function<void()>& f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---- 1. One MoE layer, routed vs dense ------------------------------------------------------

// A layer's shape and router, and its weights in bf16 (as a checkpoint stores them).
struct Layer {
  std::string name;
  checkpoint::LladaConfig config;
  model::MoeWeights bf16;
};

// A bf16 [out, in] weight drawn N(0, 1/in), as the golden checkpoints are.
at::Tensor RandomWeight(std::int64_t out, std::int64_t in) {
  return (at::randn({out, in}) / std::sqrt(static_cast<double>(in))).to(at::kBFloat16);
}

model::SwiGluWeights RandomSwiGlu(std::int64_t d_model, std::int64_t hidden) {
  model::SwiGluWeights w;
  w.gate_proj = model::Linear(RandomWeight(hidden, d_model));
  w.up_proj = model::Linear(RandomWeight(hidden, d_model));
  w.down_proj = model::Linear(RandomWeight(d_model, hidden));
  return w;
}

// LLaDA-MoE-like (softmax router, optional shared expert) or LLaDA2-like (sigmoid router with
// expert bias, group-limited, scaling 2.5, one shared expert), seeded.
Layer MakeLayer(const Args& a, Architecture arch) {
  at::manual_seed(arch == Architecture::kLlada2Moe ? 2 : 1);
  Layer l;
  const bool llada2 = arch == Architecture::kLlada2Moe;
  l.config.architecture = arch;
  l.config.d_model = a.d_model;
  auto& moe = l.config.moe;
  moe.num_experts = a.experts;
  moe.top_k = a.top_k;
  moe.expert_hidden_size = a.expert_hidden;
  moe.shared_hidden_size = llada2 || a.shared ? a.expert_hidden : 0;
  moe.n_group = llada2 ? a.groups : 1;
  moe.topk_group = llada2 ? a.topk_group : 1;
  moe.routed_scaling_factor = llada2 ? 2.5 : 1.0;
  moe.expert_bias = llada2;
  const at::Tensor router = RandomWeight(a.experts, a.d_model);
  if (llada2) {
    l.bf16.router_fp32 = router.to(at::kFloat);
    l.bf16.expert_bias = at::rand({a.experts}) * 0.2 - 0.1;
  } else {
    l.bf16.router = model::Linear(router);
  }
  for (std::int64_t e = 0; e < a.experts; ++e) l.bf16.experts.push_back(RandomSwiGlu(a.d_model, a.expert_hidden));
  if (moe.shared_hidden_size > 0) {
    l.bf16.shared = RandomSwiGlu(a.d_model, moe.shared_hidden_size);
    l.bf16.has_shared = true;
  }
  std::ostringstream name;
  name << (llada2 ? "LLaDA2 (sigmoid, " + std::to_string(moe.n_group) + " groups keep " + std::to_string(moe.topk_group) + ")"
                  : std::string("LLaDA-MoE (softmax)"))
       << (l.bf16.has_shared ? " + shared" : "");
  l.name = name.str();
  return l;
}

// The weights as the engine computes with them in `compute`: bf16 in place, except float32 compute
// on the BLAS path, which widens them once at load (llada_weights.cc, TensorOver).
model::MoeWeights ForCompute(const model::MoeWeights& w, at::ScalarType compute) {
  if (compute != at::kFloat || model::ActiveGemmPath() != model::GemmPath::kBlas) return w;
  auto widen = [](const model::Linear& l) { return model::Linear(l.weight().to(at::kFloat)); };
  auto widen_mlp = [&](const model::SwiGluWeights& m) {
    return model::SwiGluWeights{widen(m.gate_proj), widen(m.up_proj), widen(m.down_proj)};
  };
  model::MoeWeights out = w;
  if (!w.router_fp32.defined()) out.router = widen(w.router);  // LLaDA2's router is float32 already
  for (auto& e : out.experts) e = widen_mlp(e);
  if (w.has_shared) out.shared = widen_mlp(w.shared);
  return out;
}

// Every expert on every row: y = sum_e mixing[:, e] * expert_e(h) (mixing = the routing weights
// scattered over all experts, 0 where not chosen), accumulated in float32, plus the shared expert.
at::Tensor DenseAllExperts(const checkpoint::LladaConfig& c, const model::MoeWeights& w, const at::Tensor& h) {
  const model::Routing r = model::Route(c, w, h);
  const at::Tensor mixing = at::zeros({h.size(0), c.moe.num_experts}).scatter_(1, r.experts, r.weights);
  at::Tensor y = at::zeros({h.size(0), h.size(1)});
  for (std::int64_t e = 0; e < c.moe.num_experts; ++e) {
    y.addcmul_(w.experts[static_cast<std::size_t>(e)].Apply(h).to(at::kFloat), mixing.narrow(1, e, 1));
  }
  at::Tensor out = y.to(h.scalar_type());
  if (w.has_shared) out = out + w.shared.Apply(h);
  return out;
}

struct LayerRow {
  double routed_ms = 0, dense_ms = 0, max_diff = 0, max_abs = 0;
  std::int64_t experts_used = 0;
};

// Times routed and dense over `rows` random rows in `compute`, alternating the order per repetition.
LayerRow TimeLayer(const Layer& l, const model::MoeWeights& w, std::int64_t rows, at::ScalarType compute, int reps) {
  at::manual_seed(static_cast<std::uint64_t>(100 + rows));
  const at::Tensor h = at::randn({rows, l.config.d_model}).to(compute);  // unit-scale, like normed rows
  LayerRow out;
  const at::Tensor routed = model::MoeForward(l.config, w, h, 0);  // also warms up both paths
  const at::Tensor dense = DenseAllExperts(l.config, w, h);
  out.max_diff = (routed.to(at::kFloat) - dense.to(at::kFloat)).abs().max().item<double>();
  out.max_abs = dense.to(at::kFloat).abs().max().item<double>();
  out.experts_used = std::get<0>(at::_unique(model::Route(l.config, w, h).experts)).numel();
  std::vector<double> a_ms, b_ms;
  for (int rep = 0; rep < reps; ++rep) {
    auto run_a = [&] { a_ms.push_back(1e3 * Seconds([&] { model::MoeForward(l.config, w, h, 0); })); };
    auto run_b = [&] { b_ms.push_back(1e3 * Seconds([&] { DenseAllExperts(l.config, w, h); })); };
    if (rep % 2 == 0) {
      run_a();
      run_b();
    } else {
      run_b();
      run_a();
    }
  }
  out.routed_ms = Median(a_ms);
  out.dense_ms = Median(b_ms);
  return out;
}

std::string LayerTable(const Args& a) {
  std::ostringstream md;
  md << "| layer | rows | compute | experts used | routed ms | dense ms | speed-up | max abs diff (max abs output) |\n"
        "|---|---|---|---|---|---|---|---|\n";
  for (Architecture arch : {Architecture::kLladaMoe, Architecture::kLlada2Moe}) {
    const Layer l = MakeLayer(a, arch);
    for (at::ScalarType compute : {at::kFloat, at::kBFloat16}) {
      const model::MoeWeights w = ForCompute(l.bf16, compute);
      for (std::int64_t rows : Ints(a.rows)) {
        const LayerRow r = TimeLayer(l, w, rows, compute, a.reps);
        char line[400];
        std::snprintf(line, sizeof(line), "| %s | %lld | %s | %lld of %lld | %.2f | %.2f | %.2fx | %.1e (%.2f) |\n",
                      l.name.c_str(), static_cast<long long>(rows), compute == at::kFloat ? "fp32" : "bf16",
                      static_cast<long long>(r.experts_used), static_cast<long long>(a.experts), r.routed_ms,
                      r.dense_ms, r.dense_ms / r.routed_ms, r.max_diff, r.max_abs);
        md << line;
        std::cout << line << std::flush;
      }
    }
  }
  return md.str();
}

// ---- 2. The tiny model: LLaDA2's sampler vs LLaDA's reference mode ---------------------------

struct GenRun {
  double seconds = 0;
  std::int64_t calls = 0;
  std::vector<std::int64_t> ids;
};

enum class GenMode { kLlada2Uncached, kLlada2Cached, kLlada21Cached, kReference };
const char* GenModeName(GenMode m) {
  switch (m) {
    case GenMode::kLlada2Uncached: return "LLaDA2 block diffusion, no cache";
    case GenMode::kLlada2Cached: return "LLaDA2 block diffusion, cache of finished blocks";
    case GenMode::kLlada21Cached: return "LLaDA2.1 token editing (editing threshold 0.9, up to 16 post steps), cache";
    case GenMode::kReference: return "LLaDA reference (bidirectional, whole canvas)";
  }
  return "";
}

// One generation of the fixed prompt in `mode`: LLaDA2 runs block_length steps per block (its
// threshold rarely fires on this random model, so about one token per step); the reference mode
// gen_length steps in all, the same one token per step. Unless --eos-stops, EOS ends nothing
// (eos_id -1): the tiny checkpoint's EOS comes early, and LLaDA2 would stop after its first block.
GenRun Generate(const model::LladaModel& m, const sampler::PromptBatch& prompt, const Args& a, std::int64_t block,
                GenMode mode) {
  sampler::GenerationParams p;
  p.gen_length = a.gen_length;
  p.block_length = block;
  generation::WithModelTokens(m.config(), p);
  if (!a.eos_stops) p.eos_id = -1;
  sampler::Llada2Options o;
  o.cache = mode != GenMode::kLlada2Uncached;
  o.token_editing = mode == GenMode::kLlada21Cached;  // LLaDA2.1's generate, its defaults
  o.threshold = a.threshold;
  p.steps = mode == GenMode::kReference ? a.gen_length : block;
  GenRun run;
  run.seconds = Seconds([&] {
    auto s = mode == GenMode::kReference ? sampler::StartStepSampler(sampler::SamplerMode::kReference, m, prompt, p)
                                         : sampler::StartLlada2StepSampler(m, prompt, p, o);
    if (!s.ok()) throw std::runtime_error(s.status().ToString());
    auto result = sampler::RunSteps(m, **s, {}, "bench");
    if (!result.ok()) throw std::runtime_error(result.status().ToString());
    run.calls = result->steps_run;
    run.ids = result->output[0];
  });
  return run;
}

std::string SamplerTable(const Args& a, const model::LladaModel& m) {
  sampler::PromptBatch prompt;
  prompt.ids = {{}};
  for (std::int64_t i = 0; i < a.prompt_length; ++i) prompt.ids[0].push_back(17 + 23 * i % 400);  // fixed, arbitrary
  std::ostringstream md;
  md << "| block_length | sampler | model calls | tokens/s | ms per call | ids as uncached |\n|---|---|---|---|---|---|\n";
  const std::vector<GenMode> modes = {GenMode::kLlada2Uncached, GenMode::kLlada2Cached, GenMode::kLlada21Cached,
                                      GenMode::kReference};
  for (std::int64_t block : Ints(a.block_lengths)) {
    std::vector<std::vector<double>> seconds(modes.size());
    std::vector<GenRun> last(modes.size());
    for (const GenMode mode : modes) Generate(m, prompt, a, block, mode);  // warm-up
    for (int rep = 0; rep < a.reps; ++rep) {
      for (std::size_t k = 0; k < modes.size(); ++k) {
        const std::size_t i = rep % 2 == 0 ? k : modes.size() - 1 - k;  // alternate the order
        last[i] = Generate(m, prompt, a, block, modes[i]);
        seconds[i].push_back(last[i].seconds);
      }
    }
    for (std::size_t i = 0; i < modes.size(); ++i) {
      const double s = Median(seconds[i]);
      const char* same = modes[i] == GenMode::kLlada2Cached ? (last[i].ids == last[0].ids ? "yes" : "NO") : "-";
      char line[300];
      std::snprintf(line, sizeof(line), "| %lld | %s | %lld | %.1f | %.2f | %s |\n", static_cast<long long>(block),
                    GenModeName(modes[i]), static_cast<long long>(last[i].calls), a.gen_length / s,
                    1e3 * s / last[i].calls, same);
      md << line;
      std::cout << line << std::flush;
    }
  }
  return md.str();
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"MoE: routed-only experts vs every expert computed densely; LLaDA2's block diffusion vs LLaDA reference"};
  app.add_option("--rows", a.rows, "rows through the MoE layer, comma-separated")->capture_default_str();
  app.add_option("--d-model", a.d_model)->capture_default_str();
  app.add_option("--expert-hidden", a.expert_hidden, "each expert's SwiGLU width")->capture_default_str();
  app.add_option("--experts", a.experts)->capture_default_str();
  app.add_option("--top-k", a.top_k, "experts per row")->capture_default_str();
  app.add_flag("--shared", a.shared, "give the LLaDA-MoE layer a shared expert (LLaDA2's always has one)");
  app.add_option("--groups", a.groups, "LLaDA2 router: expert groups")->capture_default_str();
  app.add_option("--topk-group", a.topk_group, "LLaDA2 router: groups kept")->capture_default_str();
  app.add_option("--reps", a.reps, "repetitions (medians)")->capture_default_str();
  app.add_option("--model", a.model, "tiny LLaDA2 checkpoint for the sampler comparison")->capture_default_str();
  app.add_option("--gen-length", a.gen_length)->capture_default_str();
  app.add_option("--block-lengths", a.block_lengths, "comma-separated")->capture_default_str();
  app.add_option("--prompt-length", a.prompt_length)->capture_default_str();
  app.add_option("--threshold", a.threshold, "LLaDA2's confidence threshold")->capture_default_str();
  app.add_flag("--eos-stops", a.eos_stops, "let the checkpoint's EOS end generations (default: EOS ends nothing)");
  app.add_option("--precision", a.precision, "sampler comparison: auto, fp32, bf16")->capture_default_str();
  app.add_option("--threads", a.threads, "intra-op threads (0: the usable cores)")->capture_default_str();
  app.add_option("--gemm", a.gemm, "few-row kernel path: auto, avx512, avx2, blas")->capture_default_str();
  app.add_option("--doc", a.doc, "markdown file whose section 'moe' is replaced");
  CLI11_PARSE(app, argc, argv);
  if (a.experts % a.groups != 0 || a.topk_group > a.groups || a.top_k > a.experts) {
    std::cerr << "--experts must be a multiple of --groups, --topk-group <= --groups, --top-k <= --experts\n";
    return 2;
  }
  const std::string compute = bench::SetUpComputeOrExit(a.threads, a.gemm);
  c10::InferenceMode inference;

  std::ostringstream md;
  md << "**One MoE layer** (d_model " << a.d_model << ", " << a.experts << " experts of " << a.expert_hidden << ", top-"
     << a.top_k << "; random bf16 weights; medians of " << a.reps << "):\n\n"
     << LayerTable(a);

  const std::unique_ptr<model::LladaModel> loaded = bench::LoadModelOrExit(a.model, a.precision);
  const model::ModelOptions& options = loaded->options();
  md << "\n**Tiny model** (`" << a.model << "`, " << a.prompt_length << "-token prompt, gen_length " << a.gen_length << ", "
     << model::PrecisionName(options.precision) << " compute, greedy, LLaDA2 threshold " << a.threshold
     << (a.eos_stops ? "" : ", EOS ends nothing") << ", medians of " << a.reps << "):\n\n"
     << SamplerTable(a, *loaded);

  md << "\n" << compute << ". Machine: " << bench::MachineDescription()
     << "; CPU flags: " << model::DescribeCpuFlags(model::HostCpuFeatures()) << ". Command: `"
     << bench::CommandLine(argc, argv) << "`.\n";
  std::cout << "\n" << md.str();
  if (!a.doc.empty() && !bench::ReplaceDocSection(a.doc, "moe", md.str())) return 1;
  return 0;
}
