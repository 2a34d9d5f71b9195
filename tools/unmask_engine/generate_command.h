// `unmask-engine generate`: runs the engine in-process on a model directory.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "common/generation/params.h"
#include "common/util/status.h"
#include "tools/unmask_engine/likelihood_options.h"

namespace unmask::cli {

struct GenerateOptions {
  std::string model_dir;
  std::vector<std::string> prompt_ids;  // one "1,2,3" per batch row
  std::string prompt_text;              // encoded with the tokenizer (special tokens parsed)
  bool chat = false;                    // apply the LLaDA chat template to prompt_text
  std::string system;                   // optional system turn for --chat
  std::string tokenizer;                // tokenizer.json or a directory; default: the model's own
  // The generation parameters. The lengths left out get the defaults of every door
  // (generation::ResolveLengths: gen_length 128, block_length the largest divisor of it up to 32,
  // steps = gen_length; llada2: block 32, steps per block = block_length); params holds the rest
  // (stop_at_eos, factor, llada2's options, ...).
  std::optional<std::int64_t> gen_length, block_length, steps;
  std::optional<double> threshold;  // default: the sampler's (generation::ResolveThreshold)
  generation::GenerationParams params;
  std::string remasking = "low_confidence";
  std::string alg;  // dream: origin | maskgit_plus | topk_margin | entropy; empty = entropy
  // Any name of common/generation/sampler_mode.h, e.g. dual_cache+threshold; empty: the model's
  // default (generation::DefaultSampler: llada2 for an LLaDA2 model, else reference).
  std::string sampler;
  bool no_early_stop = false;         // fast modes: run every block even after one ends in EOS
  std::string precision = "auto";      // auto | fp32 | bf16 | fp16 (model/cpu_features.h chooses for auto)
  std::string device = "cpu";
  std::int64_t attention_chunk = 0;
  int threads = 0;                    // intra-op threads; 0: one per core
  bool cuda_graphs = false;           // ModelOptions::cuda_graphs
  bool time_forwards = false;         // ModelOptions::time_forwards
  bool fused_kernels = true;          // ModelOptions::fused_kernels on cuda (--no-fused-kernels: off)
  bool fused_kernels_asked = false;   // --fused-kernels given: say so where the kernels cannot run
  // The loader's precision spec (int8, int4:g64, bf16, ...): the weights are converted or
  // quantized as the loader does it, into a private segment; empty: the checkpoint as stored.
  std::string weights;
  int repeat = 1;                     // generations run on the loaded model; the last one is printed
  std::string gemm = "auto";          // float32 few-row products: auto | avx512 | avx2 | blas
  bool json = false;
  // Infilling: the fixed text after the generated gap (printed: the gap's text). A template with
  // holes: a file whose text has <hole:N> markers; gen_length is its length in tokens and the
  // output is the whole template, filled. Both need the tokenizer.
  std::string suffix;
  std::string template_file;
  std::optional<int> logprobs;  // 0..20: each generated token's log-probability and K alternatives
  std::optional<int> prompt_logprobs;  // 0..20: each prompt token's (common/sampler/prompt_logprobs.h)
  LikelihoodOptions likelihood;  // --continuation ...: a likelihood instead of a generation
};

// Registers the subcommand; its callback runs RunGenerate and exits with its code.
void AddGenerateCommand(CLI::App& app);

// Runs one generation and prints it. Returns the process exit code (0 ok, 2 bad input, 1 failure).
int RunGenerate(const GenerateOptions& options, std::ostream& out, std::ostream& err);

// "1,2,3" -> {1,2,3}; errors name the bad element.
StatusOr<std::vector<std::int64_t>> ParseIdList(const std::string& text);

}  // namespace unmask::cli
