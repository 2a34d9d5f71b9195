// Quality of quantized and pruned weights: logits of the golden tiny LLaDA checkpoint computed
// from int8 / int4 / pruned segments compared with the bf16 segment (fp32 compute) — top-1
// agreement over positions and max relative error of the logits.
//
//   bench_quant_quality --model tests/data/tiny-llada [--doc docs/benchmarks.md]
#include <ATen/ATen.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <random>
#include <sstream>

#include "bench/common/bench_compute.h"
#include "bench/common/bench_report.h"
#include "common/model/llada_model.h"
#include "common/registry/progressive_loader.h"
#include "common/segment/weight_view.h"

namespace {

std::shared_ptr<const unmask::model::LladaModel> FromSpec(const std::string& dir, const std::string& spec_text) {
  auto spec = unmask::weights::PrecisionSpec::Parse(spec_text);
  auto loaded = unmask::weights::LoadModelDir(dir, *spec, "quality-" + std::to_string(std::hash<std::string>()(spec_text)));
  if (!loaded.ok()) throw std::runtime_error(loaded.status().ToString());
  auto attached = unmask::weights::AttachedModel::Attach(loaded->segment.name());
  (void)loaded->segment.Unlink();
  auto model = unmask::model::LladaModel::FromSegment(
      std::make_shared<unmask::weights::AttachedModel>(std::move(*attached)), unmask::model::ModelOptions{});
  if (!model.ok()) throw std::runtime_error(model.status().ToString());
  return std::shared_ptr<const unmask::model::LladaModel>(std::move(*model));
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "tests/data/tiny-llada", doc;
  int sequences = 8, length = 64;
  CLI::App app{"bench_quant_quality"};
  app.add_option("--model", dir);
  app.add_option("--sequences", sequences);
  app.add_option("--length", length);
  app.add_option("--doc", doc);
  CLI11_PARSE(app, argc, argv);
  (void)unmask::bench::SetUpComputeOrExit();

  auto reference = FromSpec(dir, "bf16");
  const auto& config = reference->config();
  // Random prompts with the second half masked, as the sampler sees them.
  std::mt19937 rng(1);
  std::uniform_int_distribution<std::int64_t> token(0, config.vocab_size - 1);
  at::Tensor ids = at::empty({sequences, length}, at::kLong);
  auto acc = ids.accessor<std::int64_t, 2>();
  for (int s = 0; s < sequences; ++s)
    for (int i = 0; i < length; ++i) acc[s][i] = i < length / 2 ? token(rng) : config.mask_token_id;
  const at::Tensor ref = reference->Logits(ids, at::Tensor());
  const at::Tensor ref_top = ref.argmax(-1);

  std::ostringstream md;
  md << "Golden tiny LLaDA checkpoint (random weights, d_model " << config.d_model << ", " << config.n_layers
     << " layers), " << sequences << " sequences of " << length
     << " tokens (second half masked), fp32 compute; each row against the bf16 segment.\n\n"
     << "| weights | top-1 agreement | max rel. error of logits | mean abs. error |\n|---|---|---|---|\n";
  for (const std::string spec : {"int8", "int4:g128", "int4:g64", "int4:g32", "int4:g32:sym", "bf16:prune=0.25",
                                 "bf16:prune=0.5", "int8:prune=0.5"}) {
    auto model = FromSpec(dir, spec);
    const at::Tensor logits = model->Logits(ids, at::Tensor());
    const double agree = logits.argmax(-1).eq(ref_top).to(at::kDouble).mean().item<double>();
    const double rel = ((logits - ref).abs().max() / ref.abs().max()).item<double>();
    const double mae = (logits - ref).abs().mean().item<double>();
    char row[200];
    std::snprintf(row, sizeof(row), "| %s | %.1f%% | %.4f | %.5f |\n", spec.c_str(), 100 * agree, rel, mae);
    md << row;
  }
  md << "\nMachine: " << unmask::bench::MachineDescription() << ". Command: `" << unmask::bench::CommandLine(argc, argv) << "`\n";
  std::cout << md.str();
  if (!doc.empty()) unmask::bench::ReplaceDocSection(doc, "quant-quality", md.str());
  return 0;
}
