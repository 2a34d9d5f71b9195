// What bench_memory measures: the models (random checkpoints of four architectures) and the
// request sizes run against each.
#pragma once

#include <string>
#include <vector>

#include "common/fitting/clamp.h"
#include "tools/make_model/make_model.h"

namespace unmask::bench::memory {

enum class ModelKind {
  kDense,     // LLaDA: d_model 256, 4 layers, MLP 768 (the model the dense figures were made on)
  kLladaMoe,  // LLaDA-MoE: 64 experts of 128, top-8, every layer MoE
  kLlada2,    // LLaDA2.x: 64 experts of 128 in 8 groups (4 kept), top-8, a shared expert, layer 0 dense
  kDream,     // Dream: Qwen2 blocks, d_model 256, 4 layers, 8 heads (2 KV heads), q/k/v biases, MLP 768
};

const std::vector<ModelKind>& AllModelKinds();
const char* ModelKindName(ModelKind kind);  // "dense", "llada-moe", "llada2", "dream"
// The random checkpoint of that kind (LLaDA's vocabulary of 126464: the logits stay as large as
// a real model's against these small layers).
tools::MakeModelOptions ModelOptionsFor(ModelKind kind);

struct Case {
  ModelKind model = ModelKind::kDense;
  fitting::GenerationRequest request;  // compute_dtype_bytes 4 = fp32, 2 = bf16
  std::string note;
  // Steps run before the generation is stopped: 0 = --steps-run; -1 = all of them (LLaDA2's
  // window grows block by block, so its peak is in the last block's first step).
  int steps_run = 0;
  // Of request.prompt_length (what the clamp sees), this many tokens are an infilling suffix after
  // the generated region (PromptBatch::canvas.suffix) rather than prompt.
  std::int64_t suffix = 0;
};

std::vector<Case> Cases(bool quick);

}  // namespace unmask::bench::memory
