#include "bench/memory/memory_cases.h"

#include <algorithm>

#include "bench/common/temp_model.h"

namespace unmask::bench::memory {
namespace {

using generation::SamplerMode;

struct CaseBuilder {
  std::vector<Case>* out;
  ModelKind model;

  Case& Add(SamplerMode sampler, int dtype, std::int64_t batch, std::int64_t prompt, std::int64_t gen,
            const std::string& note = "", double temperature = 0, double cfg = 0, std::int64_t chunk = 0) {
    Case c;
    c.model = model;
    fitting::GenerationRequest& r = c.request;
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
    c.note = note;
    out->push_back(c);
    return out->back();
  }
};

std::vector<std::int64_t> Gens(bool quick) {
  return quick ? std::vector<std::int64_t>{64, 256} : std::vector<std::int64_t>{64, 128, 256};
}

// The LLaDA modes over the grid both LLaDA architectures are measured on.
void AddGrid(CaseBuilder& b, bool quick) {
  for (int dtype : {4, 2}) {
    for (SamplerMode sampler : {SamplerMode::kReference, SamplerMode::kDualCache}) {
      for (std::int64_t gen : Gens(quick)) {
        for (std::int64_t batch : {1, 4}) b.Add(sampler, dtype, batch, 32, gen);
      }
    }
  }
}

void AddDense(std::vector<Case>& out, bool quick) {
  CaseBuilder b{&out, ModelKind::kDense};
  AddGrid(b, quick);
  b.Add(SamplerMode::kReference, 4, 1, 32, 128, "temperature 0.7", 0.7);
  b.Add(SamplerMode::kReference, 4, 1, 32, 128, "cfg 1.0", 0, 1.0);
  b.Add(SamplerMode::kBlockLogits, 4, 4, 32, 256, "");
  b.Add(SamplerMode::kDualCache, 4, 1, 1024, 64, "long prompt");
  b.Add(SamplerMode::kDualCache, 4, 1, 1024, 64, "long prompt, chunk 128", 0, 0, 128);
  b.Add(SamplerMode::kDualCache, 2, 2, 2048, 64, "long prompt");
  // Infilling (the scheduler counts the suffix with the prompt) and logprobs.
  for (SamplerMode sampler : {SamplerMode::kReference, SamplerMode::kDualCache}) {
    b.Add(sampler, 4, 1, 32 + 96, 64, "infill: prompt 32 + suffix 96").suffix = 96;
    b.Add(sampler, 4, 1, 32, 128, "logprobs 5").request.params.logprobs = 5;
  }
  // Prompt scoring (prompt_logprobs) before the first step: forwards no larger than the job's own,
  // so the same prediction holds. Few generated tokens beside a long prompt are the largest share.
  for (int dtype : {4, 2}) {
    b.Add(SamplerMode::kReference, dtype, 1, 256, 32, "prompt logprobs 5").request.params.prompt_logprobs = 5;
    b.Add(SamplerMode::kReference, dtype, 1, 64, 256, "prompt logprobs 5").request.params.prompt_logprobs = 5;
  }
  b.Add(SamplerMode::kDualCache, 4, 1, 512, 32, "prompt logprobs 5").request.params.prompt_logprobs = 5;
  // A likelihood job (common/sampler/likelihood.h): no generation, its draws' forwards of
  // rows_per_forward sequences (the job's one generated position included) with logits over the
  // masked positions; the clamp sizes it as that many sequences with logits over the
  // continuation's positions (ShapeOf).
  auto likelihood = [&](int dtype, std::int64_t prompt, std::int64_t continuation, double cfg, bool greedy,
                        std::int32_t rows, const std::string& note) {
    Case& c = b.Add(SamplerMode::kReference, dtype, 1, prompt, 1, note, 0, cfg);
    c.request.params.block_length = c.request.params.steps = 1;
    c.request.params.likelihood = generation::LikelihoodParams{continuation, 16, 16, greedy, rows};
  };
  for (int dtype : {4, 2}) {
    likelihood(dtype, 256, 64, 0, false, 1, "likelihood: 64 of 256");
    likelihood(dtype, 1024, 512, 0, false, 1, "likelihood: 512 of 1024");
    likelihood(dtype, 256, 64, 0, false, 16, "likelihood: 64 of 256, 16 samples a forward");
    likelihood(dtype, 1024, 512, 0, false, 4, "likelihood: 512 of 1024, 4 samples a forward");
  }
  likelihood(4, 256, 64, 1.0, true, 1, "likelihood: 64 of 256, cfg 1.0, greedy check");
  likelihood(4, 256, 64, 1.0, true, 16, "likelihood: 64 of 256, cfg 1.0, greedy check, 16 samples a forward");
}

// The grid, then long prompts with chunked attention: there the routed experts' rows (top-8
// copies of every position), not the block's logits, are the largest part of the fill step.
void AddLladaMoe(std::vector<Case>& out, bool quick) {
  CaseBuilder b{&out, ModelKind::kLladaMoe};
  AddGrid(b, quick);
  b.Add(SamplerMode::kDualCache, 4, 1, 4000, 64, "long prompt, chunk 128", 0, 0, 128);
  b.Add(SamplerMode::kDualCache, 2, 1, 8000, 64, "long prompt, chunk 128", 0, 0, 128);
}

// LLaDA2's sampler takes one prompt. Prompt 40: the canvas is padded past the last generated
// token to a whole block. steps is per block there; 4 keeps the run short (8 tokens a step on
// a random model) and the peak does not depend on it. Run to the end: the window grows.
void AddLlada2(std::vector<Case>& out, bool quick) {
  CaseBuilder b{&out, ModelKind::kLlada2};
  auto add = [&](int dtype, std::int64_t prompt, std::int64_t gen, const std::string& note, double temperature = 0,
                 std::int64_t chunk = 0) {
    Case& c = b.Add(SamplerMode::kLlada2, dtype, 1, prompt, gen, note, temperature, 0, chunk);
    c.request.params.block_length = 32;
    c.request.params.steps = 4;
    c.steps_run = -1;
  };
  for (int dtype : {4, 2}) {
    for (std::int64_t gen : Gens(quick)) add(dtype, 40, gen, "");
  }
  add(4, 40, 128, "temperature 0.7", 0.7);
  add(2, 40, 128, "temperature 0.7", 0.7);
  add(4, 40, 128, "temperature 0.7, top_p 0.9", 0.7);
  out.back().request.params.top_p = 0.9;
  add(4, 2040, 64, "long prompt, chunk 128", 0, 128);
  add(2, 4040, 64, "long prompt, chunk 128", 0, 128);
}

// Dream: the official dream sampler (whole canvas every step, logits for the masked positions)
// and Fast-dLLM's prefix cache and dual cache with the threshold rule (blocks of 32), greedy and
// at the model card's temperature 0.2 with top_p 0.95, where a cache mode's refresh call samples
// every position of the canvas. dream has no blocks (block_length = gen_length); the dual cache
// and the threshold rule take one prompt, so batch 4 only for dream and the prefix cache.
void AddDream(std::vector<Case>& out, bool quick) {
  CaseBuilder b{&out, ModelKind::kDream};
  const std::string sampled = "temperature 0.2, top_p 0.95";
  auto add = [&](SamplerMode sampler, int dtype, std::int64_t batch, std::int64_t gen, double temperature) {
    Case& c = b.Add(sampler, dtype, batch, 32, gen, temperature > 0 ? sampled : "", temperature);
    if (temperature > 0) c.request.params.top_p = 0.95;
    if (sampler == SamplerMode::kDream) c.request.params.block_length = gen;
  };
  for (int dtype : {4, 2}) {
    for (SamplerMode sampler :
         {SamplerMode::kDream, SamplerMode::kDreamPrefixCache, SamplerMode::kDreamDualCacheThreshold}) {
      for (double temperature : {0.0, 0.2}) {
        for (std::int64_t gen : Gens(quick)) add(sampler, dtype, 1, gen, temperature);
      }
    }
  }
  add(SamplerMode::kDream, 4, 1, 128, 0);  // top_p sorts at temperature 0 too
  out.back().request.params.top_p = 0.95;
  out.back().note = "top_p 0.95";
  add(SamplerMode::kDream, 4, 4, 128, 0);
  add(SamplerMode::kDream, 4, 4, 128, 0.2);
  add(SamplerMode::kDreamPrefixCache, 4, 4, 128, 0.2);
}

}  // namespace

const std::vector<ModelKind>& AllModelKinds() {
  static const std::vector<ModelKind> kinds = {ModelKind::kDense, ModelKind::kLladaMoe, ModelKind::kLlada2,
                                                ModelKind::kDream};
  return kinds;
}

const char* ModelKindName(ModelKind kind) {
  switch (kind) {
    case ModelKind::kDense: return "dense";
    case ModelKind::kLladaMoe: return "llada-moe";
    case ModelKind::kLlada2: return "llada2";
    case ModelKind::kDream: return "dream";
  }
  return "?";
}

tools::MakeModelOptions ModelOptionsFor(ModelKind kind) {
  if (kind == ModelKind::kDense) return RandomModel(256, 4, 4, 768);
  if (kind == ModelKind::kDream) {  // the dense model's sizes, with Dream's GQA (as Qwen2's) and q/k/v biases
    tools::MakeModelOptions options = RandomModel(256, 4, 8, 768);
    options.config.architecture = checkpoint::Architecture::kDream;
    options.config.n_kv_heads = 2;
    options.config.qkv_bias = true;
    return options;
  }
  MoeModelShape s;
  if (kind == ModelKind::kLlada2) {
    s.architecture = checkpoint::Architecture::kLlada2Moe;
    s.n_kv_heads = 2;  // grouped KV heads, as the published LLaDA2 models have
    s.shared_hidden = s.expert_hidden;
    s.n_group = 8;
    s.topk_group = 4;
    s.first_dense = 1;
    s.dense_hidden = 768;
  }
  tools::MakeModelOptions options = RandomMoeModel(s);
  options.config.max_sequence_length = 8192;  // room for the long-prompt cases
  return options;
}

std::vector<Case> Cases(bool quick) {
  std::vector<Case> out;
  AddDense(out, quick);
  AddLladaMoe(out, quick);
  AddLlada2(out, quick);
  AddDream(out, quick);
  return out;
}

}  // namespace unmask::bench::memory
