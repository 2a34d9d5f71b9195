// The sampling modes side by side: the reference and each fast mode run in one process on the
// same model, prompt and seed (temperature 0), one after the other. For each: forwards run,
// tokens/s, ms per forward, speed-up over the reference, and agreement with the reference
// (fraction of output positions holding the same token). Writes a markdown table (and, with
// --doc, the section "samplers" of docs/benchmarks.md).
//
//   bench_samplers [--model DIR] [--gen-length 256] [--block-length 32] [--steps 256]
//                  [--prompt-length 32] [--precision bf16] [--modes all] [--threshold 0.9]
//                  [--factor 1.0] [--confident-scale 40] [--confident-modes LIST] [--trace]
//                  [--doc docs/benchmarks.md]
// Without --model a random ~150M-parameter LLaDA-layout model (d_model 512, 8 layers, 8 heads,
// MLP 1408, vocab 126464) is written to a temp directory first.
//
// Random weights give near-uniform predictions (top-1 probability ~1e-4 over 126k tokens), so
// the confidence-based rules never find a token above their bound and fall back to one token
// per step. To show what parallel decoding does when the model is sure of itself, a second table
// (--confident-scale S > 0) repeats the run on the same model with its LM head weights
// multiplied by S: argmax tokens are unchanged, logits are S times larger, so softmax
// confidences are sharp. The reference is re-run on that model and agreement is measured
// against it. The mean top-1 probability over the masked positions of the first step is printed
// for both models so the reader can see how confident each one is.
#include <unistd.h>

#include <ATen/ATen.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "bench/common/bench_compute.h"
#include "bench/common/temp_model.h"
#include "bench/common/bench_report.h"
#include "common/model/llada_model.h"
#include "common/sampler/sampler_registry.h"
#include "tools/make_model/make_model.h"

namespace {

using namespace unmask;

struct Args {
  std::string model;
  std::int64_t gen_length = 256, block_length = 32, steps = 256, prompt_length = 32;
  std::string precision = "bf16";
  std::string modes = "all";
  std::string confident_modes =
      "reference,dual_cache,threshold,prefix_cache+threshold,dual_cache+threshold,factor,prefix_cache+factor,"
      "dual_cache+factor";
  double threshold = 0.9, factor = 1.0, confident_scale = 40;
  std::string doc;
  bool trace = false;
};

std::vector<generation::SamplerMode> ParseModes(const std::string& list) {
  std::vector<generation::SamplerMode> out;
  if (list == "all") return generation::LladaSamplerModes();
  std::stringstream ss(list);
  std::string name;
  while (std::getline(ss, name, ',')) {
    auto m = generation::ParseSamplerMode(name);
    if (!m.ok()) {
      std::cerr << m.status().ToString() << "\n";
      std::exit(2);
    }
    out.push_back(*m);
  }
  // The reference goes first: every other row is compared with it.
  std::stable_partition(out.begin(), out.end(), [](auto m) { return m == generation::SamplerMode::kReference; });
  if (out.empty() || out[0] != generation::SamplerMode::kReference) out.insert(out.begin(), generation::SamplerMode::kReference);
  return out;
}

// Mean softmax probability of the argmax token over the gen_length masked positions of the
// first step: how sure the model is.
double MeanTopProbability(const model::LladaModel& m, const std::vector<std::int64_t>& prompt, std::int64_t gen_length,
                          std::int64_t mask_id) {
  std::vector<std::int64_t> ids = prompt;
  ids.resize(prompt.size() + gen_length, mask_id);
  at::Tensor x = at::from_blob(ids.data(), {1, static_cast<std::int64_t>(ids.size())}, at::kLong).clone();
  at::Tensor hidden = m.Hidden(x, at::Tensor()).narrow(1, static_cast<std::int64_t>(prompt.size()), gen_length);
  at::Tensor probs = at::softmax(m.HeadLogits(hidden).to(at::kFloat), -1);
  return std::get<0>(probs.max(-1)).mean().item<double>();
}

std::string RunTable(const model::LladaModel& m, const Args& a, const std::vector<generation::SamplerMode>& modes,
                     const sampler::PromptBatch& prompts, const generation::GenerationParams& p, int* failures) {
  generation::FastOptions o;
  o.threshold = a.threshold;
  o.factor = a.factor;
  std::ostringstream md;
  md << "| mode | forwards | seconds | tokens/s | ms/forward | speed-up | agreement with reference |\n"
     << "|---|---|---|---|---|---|---|\n";
  std::vector<std::int64_t> reference;
  double reference_seconds = 0;
  for (auto mode : modes) {
    // Warm-up: the first block only (allocations, caches of the allocator and of BLAS).
    generation::GenerationParams warm = p;
    warm.gen_length = warm.block_length;
    warm.steps = std::max<std::int64_t>(1, p.steps / (p.gen_length / p.block_length));
    (void)sampler::Generate(mode, m, prompts, warm, o);
    std::string counts;
    auto r = sampler::Generate(mode, m, prompts, p, o, [&](const sampler::StepEvent& ev) {
      if (a.trace) counts += (ev.step_in_block == 0 && ev.step > 0 ? " | " : " ") + std::to_string(ev.positions[0].size());
      return true;
    });
    if (a.trace) {
      std::cerr << generation::SamplerModeName(mode) << " tokens per step:" << counts << "\n  output:";
      if (r.ok())
        for (auto id : r->output[0]) std::cerr << " " << id;
      std::cerr << "\n";
    }
    if (!r.ok()) {
      std::cerr << generation::SamplerModeName(mode) << ": " << r.status().ToString() << "\n";
      ++*failures;
      continue;
    }
    const auto& out = r->output[0];
    if (mode == generation::SamplerMode::kReference) {
      reference = out;
      reference_seconds = r->seconds;
    }
    std::int64_t same = 0;
    for (std::size_t i = 0; i < out.size() && i < reference.size(); ++i) same += out[i] == reference[i];
    char row[320];
    std::snprintf(row, sizeof(row), "| %s | %lld | %.2f | %.2f | %.1f | %.2fx | %.1f%% |\n", r->sampler,
                  static_cast<long long>(r->steps_run), r->seconds, a.gen_length / r->seconds,
                  1000.0 * r->seconds / r->steps_run, reference_seconds > 0 ? reference_seconds / r->seconds : 0.0,
                  reference.empty() ? 0.0 : 100.0 * same / static_cast<double>(out.size()));
    md << row;
    std::cerr << row << std::flush;
  }
  return md.str();
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"bench_samplers"};
  app.add_option("--model", a.model);
  app.add_option("--gen-length", a.gen_length);
  app.add_option("--block-length", a.block_length);
  app.add_option("--steps", a.steps);
  app.add_option("--prompt-length", a.prompt_length);
  app.add_option("--precision", a.precision, "fp32, bf16 or fp16");
  app.add_option("--modes", a.modes, "comma-separated sampler modes, or all");
  app.add_option("--threshold", a.threshold);
  app.add_option("--factor", a.factor);
  app.add_option("--confident-scale", a.confident_scale, "LM head multiplier for the second table; 0: no second table");
  app.add_option("--confident-modes", a.confident_modes);
  app.add_flag("--trace", a.trace, "print the tokens unmasked per step of each mode to stderr");
  app.add_option("--doc", a.doc, "markdown file whose bench:samplers section is replaced");
  CLI11_PARSE(app, argc, argv);
  (void)unmask::bench::SetUpComputeOrExit();

  std::unique_ptr<bench::TempModel> temp;
  if (a.model.empty()) {
    auto made = bench::TempModel::Make("samplers", bench::RandomModel(512, 8, 8, 1408));
    if (!made.ok()) {
      std::cerr << made.status().ToString() << "\n";
      return 1;
    }
    temp = std::move(*made);
    a.model = temp->dir();
  }
  model::ModelOptions opts;
  auto precision = model::ParsePrecision(a.precision);
  if (!precision.ok()) {
    std::cerr << precision.status().ToString() << "\n";
    return 2;
  }
  opts.precision = *precision;
  auto loaded = model::LladaModel::Load(a.model, opts);
  if (!loaded.ok()) {
    std::cerr << loaded.status().ToString() << "\n";
    return 1;
  }
  const model::LladaModel& m = **loaded;
  const auto& config = m.config();

  sampler::PromptBatch prompts;
  prompts.ids.emplace_back();
  for (std::int64_t i = 0; i < a.prompt_length; ++i) prompts.ids[0].push_back(1000 + 37 * i);
  generation::GenerationParams p;
  p.gen_length = a.gen_length;
  p.block_length = a.block_length;
  p.steps = a.steps;
  p.mask_id = config.mask_token_id;
  p.eos_id = config.eos_token_id;

  int failures = 0;
  std::ostringstream md;
  md << "All modes in one process, one after the other, on the same prompt (" << a.prompt_length
     << " ids) and seed: batch 1, gen_length " << a.gen_length << ", block_length " << a.block_length << ", steps "
     << a.steps << ", temperature 0, low-confidence remasking, " << a.precision << " compute, threshold "
     << a.threshold << ", factor " << a.factor << ", early stop on for the fast modes; model: "
     << config.parameter_count() / 1e6 << " M parameters (d_model " << config.d_model << ", " << config.n_layers
     << " layers, " << config.n_heads << " heads, MLP " << config.mlp_hidden_size << ", vocab " << config.vocab_size
     << (!temp ? "), weights from " + a.model : std::string("), random weights"))
     << ". \"forwards\" = denoising steps run (model calls); \"agreement\" = fraction of the "
     << a.gen_length << " generated positions holding the reference's token.\n\n";
  char line[512];
  std::snprintf(line, sizeof(line), "**%s** (mean top-1 probability at the first step: %.2g).\n\n",
                !temp ? "Model as loaded" : "Random weights",
                MeanTopProbability(m, prompts.ids[0], a.gen_length, p.mask_id));
  md << line;
  std::cerr << line;
  md << RunTable(m, a, ParseModes(a.modes), prompts, p, &failures);

  std::unique_ptr<model::LladaModel> confident;
  if (a.confident_scale > 0) {
    model::LladaWeights w = m.weights();
    w.lm_head = model::Linear(w.lm_head.weight() * a.confident_scale);
    confident = std::make_unique<model::LladaModel>(config, std::move(w), opts, m.device());
    std::snprintf(line, sizeof(line),
                  "\n**\"Confident\" model**: the same weights with the LM head multiplied by %g (argmax unchanged, "
                  "logits x%g; mean top-1 probability at the first step: %.2f). The reference is re-run on this "
                  "model and agreement is measured against that run.\n\n",
                  a.confident_scale, a.confident_scale,
                  MeanTopProbability(*confident, prompts.ids[0], a.gen_length, p.mask_id));
    md << line;
    std::cerr << line;
    md << RunTable(*confident, a, ParseModes(a.confident_modes), prompts, p, &failures);
  }
  md << "\nMachine: " << bench::MachineDescription() << ". Command: `" << bench::CommandLine(argc, argv) << "`\n";
  std::cout << md.str();
  if (!a.doc.empty() && !bench::ReplaceDocSection(a.doc, "samplers", md.str())) {
    std::cerr << "cannot write " << a.doc << "\n";
    ++failures;
  }
  return failures ? 1 : 0;
}
