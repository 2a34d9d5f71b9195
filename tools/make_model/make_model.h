// Random checkpoints in the exact Hugging Face LLaDA layout, at any size, for tests and
// benchmarks (real weights cannot be downloaded here).
#pragma once

#include <cstdint>
#include <string>

#include "common/checkpoint/dtype.h"
#include "common/checkpoint/llada_config.h"
#include "common/util/status.h"

namespace unmask::tools {

struct MakeModelOptions {
  checkpoint::LladaConfig config;
  int shards = 2;
  checkpoint::DType dtype = checkpoint::DType::kBF16;
  std::uint64_t seed = 0;
  float init_std = 0.02f;  // LLaDA's init_std
  std::string tokenizer;   // optional tokenizer.json copied next to the weights
  // > 0: LM head rows of ids >= active_vocab are zero, so that a random model only picks ids
  // below it (e.g. the ids a small demo tokenizer knows) and its output decodes to text.
  std::int64_t active_vocab = 0;
  // The LM head's values multiplied by this (the same draws): logits this many times larger, the
  // same argmax, sharper confidences, so that a random model's threshold rule fires (benchmarks of
  // parallel decoding, as bench_samplers' --confident-scale). > 0; 1: as drawn. Not with weight
  // tying (the head is the embedding table there).
  float head_scale = 1.0f;
  // false (the default): one std::mt19937_64 + std::normal_distribution stream over all tensors
  // on one thread; its bytes for a seed never change (tests and benchmarks depend on them).
  // true: each tensor is filled on all hardware threads over fixed chunks of 1<<20 values, each
  // chunk drawing Box-Muller normals (mean 0, std init_std) from its own splitmix64 stream keyed
  // by (seed, tensor index, chunk index). An 8B model in seconds; the bytes depend on the seed
  // only (not on the thread count) but differ from the default generator's for the same seed.
  bool fast_init = false;
  // Threads for fast_init; 0: std::thread::hardware_concurrency() (at least 1).
  int fast_init_threads = 0;
};

// Writes config.json, the shards and the index into `dir` (created if needed).
Status MakeModel(const std::string& dir, const MakeModelOptions& options);

}  // namespace unmask::tools
