// Generation throughput and peak memory of the reference sampler, one child process per
// precision so that each peak is its own. Writes a markdown table (and, with --doc, the section
// "engine-baseline" of docs/benchmarks.md).
//
//   bench_generate [--model DIR] [--gen-length 128] [--block-length 32] [--steps 128]
//                  [--precisions fp32,bf16] [--doc docs/benchmarks.md]
// Without --model a random ~150M-parameter LLaDA-layout model (d_model 512, 8 layers, 8 heads,
// MLP 1408, vocab 126464) is written to a temp directory first.
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/common/bench_compute.h"
#include "bench/common/temp_model.h"
#include "bench/common/bench_report.h"
#include "common/model/llada_model.h"
#include "common/sampler/reference_sampler.h"
#include "tools/make_model/make_model.h"

namespace {

struct Args {
  std::string model;
  std::int64_t gen_length = 128, block_length = 32, steps = 128, prompt_length = 32;
  std::string precisions = "fp32,bf16";
  std::string doc;
};

// Runs in the child: load, warm up, generate; returns the figures as JSON.
nlohmann::json RunOne(const Args& a, const std::string& precision) {
  using namespace unmask;
  model::ModelOptions opts;
  opts.precision = *model::ParsePrecision(precision);
  auto t0 = std::chrono::steady_clock::now();
  auto m = model::LladaModel::Load(a.model, opts);
  if (!m.ok()) return {{"error", m.status().ToString()}};
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sampler::PromptBatch prompts;
  prompts.ids.emplace_back();
  for (std::int64_t i = 0; i < a.prompt_length; ++i) prompts.ids[0].push_back(1000 + 37 * i);
  generation::GenerationParams p;
  p.gen_length = a.gen_length;
  p.block_length = a.block_length;
  p.steps = a.steps;
  p.mask_id = (*m)->config().mask_token_id;
  // Warm-up: one block's worth of steps on a short generation.
  generation::GenerationParams warm = p;
  warm.gen_length = warm.block_length;
  warm.steps = std::max<std::int64_t>(1, p.steps / (p.gen_length / p.block_length));
  (void)sampler::ReferenceGenerate(**m, prompts, warm);
  auto r = sampler::ReferenceGenerate(**m, prompts, p);
  if (!r.ok()) return {{"error", r.status().ToString()}};
  return {{"precision", precision},
          {"load_seconds", load_s},
          {"seconds", r->seconds},
          {"tokens_per_second", a.gen_length / r->seconds},
          {"ms_per_step", 1000.0 * r->seconds / r->steps_run},
          {"peak_rss", bench::PeakRssBytes()}};
}

nlohmann::json RunInChild(const Args& a, const std::string& precision) {
  int fds[2];
  if (::pipe(fds) != 0) return {{"error", "pipe failed"}};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out = RunOne(a, precision).dump();
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) > 0) text.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return {{"error", "child failed"}};
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"bench_generate"};
  app.add_option("--model", a.model);
  app.add_option("--gen-length", a.gen_length);
  app.add_option("--block-length", a.block_length);
  app.add_option("--steps", a.steps);
  app.add_option("--prompt-length", a.prompt_length);
  app.add_option("--precisions", a.precisions);
  app.add_option("--doc", a.doc, "markdown file whose bench:engine-baseline section is replaced");
  CLI11_PARSE(app, argc, argv);
  (void)unmask::bench::SetUpComputeOrExit();

  std::unique_ptr<unmask::bench::TempModel> temp;
  if (a.model.empty()) {
    auto made = unmask::bench::TempModel::Make("generate", unmask::bench::RandomModel(512, 8, 8, 1408));
    if (!made.ok()) {
      std::cerr << made.status().ToString() << "\n";
      return 1;
    }
    temp = std::move(*made);
    a.model = temp->dir();
  }
  auto config = unmask::checkpoint::LladaConfig::FromFile(a.model + "/config.json");
  if (!config.ok()) {
    std::cerr << config.status().ToString() << "\n";
    return 1;
  }

  std::ostringstream md;
  md << "Reference sampler (official `generate()` algorithm), batch 1, prompt " << a.prompt_length
     << " tokens, gen_length " << a.gen_length << ", block_length " << a.block_length << ", steps " << a.steps
     << "; model: " << config->parameter_count() / 1e6 << " M parameters (d_model " << config->d_model << ", "
     << config->n_layers << " layers, " << config->n_heads << " heads, MLP " << config->mlp_hidden_size
     << ", vocab " << config->vocab_size << "), bf16 weights on disk.\n\n"
     << "| precision | tokens/s | ms/step | seconds | load s | peak RSS |\n|---|---|---|---|---|---|\n";
  std::stringstream list(a.precisions);
  std::string precision;
  int failures = 0;
  while (std::getline(list, precision, ',')) {
    auto r = RunInChild(a, precision);
    if (r.contains("error")) {
      std::cerr << precision << ": " << r["error"] << "\n";
      ++failures;
      continue;
    }
    char row[256];
    std::snprintf(row, sizeof(row), "| %s | %.2f | %.1f | %.2f | %.2f | %s |\n", precision.c_str(),
                  r["tokens_per_second"].get<double>(), r["ms_per_step"].get<double>(), r["seconds"].get<double>(),
                  r["load_seconds"].get<double>(), unmask::bench::FormatBytes(r["peak_rss"].get<std::uint64_t>()).c_str());
    md << row;
  }
  md << "\nMachine: " << unmask::bench::MachineDescription() << ". Command: `" << unmask::bench::CommandLine(argc, argv)
     << "`\n";
  std::cout << md.str();
  if (!a.doc.empty() && !unmask::bench::ReplaceDocSection(a.doc, "engine-baseline", md.str())) {
    std::cerr << "cannot write " << a.doc << "\n";
    ++failures;
  }
  return failures ? 1 : 0;
}
