// The memory model's Dream rows (common/fitting/memory_model.cc, DreamLogitRows and
// DreamSampling): Dream's samplers take float32 logits of the masked positions (dream) or of the
// block (the cache modes' inner calls), and at temperature > 0 a cache mode's refresh call
// samples every position of the canvas; top_p's sort is counted. bench_memory's Dream table
// measured 20-29 bytes a logit there, where the LLaDA formulas predicted up to 6x less.
#include <gtest/gtest.h>

#include <string>

#include "common/fitting/clamp.h"
#include "common/fitting/memory_model.h"
#include "tests/fixtures/tiny_config.h"

namespace unmask::fitting {
namespace {

using checkpoint::LladaConfig;

constexpr std::uint64_t kVocab = 126464;

// bench_memory's random Dream model: LLaDA's vocabulary, 8 heads of which 2 KV heads, q/k/v biases.
LladaConfig DreamConfig() {
  LladaConfig c = testing::SmallConfigWithLladaVocab();
  c.architecture = checkpoint::Architecture::kDream;
  c.n_heads = 8;
  c.n_kv_heads = 2;
  c.qkv_bias = true;
  return c;
}

LladaConfig LladaWithDreamShapes() {
  LladaConfig c = DreamConfig();
  c.architecture = checkpoint::Architecture::kLlada;
  c.qkv_bias = false;
  return c;
}

GenerationRequest Request(generation::SamplerMode mode, std::int64_t prompt, std::int64_t gen, int dtype,
                          double temperature = 0) {
  GenerationRequest r;
  r.params.sampler = mode;
  r.params.gen_length = gen;
  r.params.block_length = mode == generation::SamplerMode::kDream ? gen : 32;
  r.params.steps = gen;
  r.params.temperature = temperature;
  r.params.top_p = temperature > 0 ? 0.95 : 1.0;
  r.prompt_length = prompt;
  r.compute_dtype_bytes = dtype;
  return r;
}

// At bf16 the head's own output stays alive beside the float32 logits: 2 more bytes a logit.
std::uint64_t BfHead(int dtype) { return dtype == 2 ? 2 : 0; }

std::uint64_t PhaseBytes(const MemoryEstimate& e, const std::string& name) {
  for (const auto& p : e.phases)
    if (p.name == name) return p.bytes;
  ADD_FAILURE() << "no phase " << name;
  return 0;
}

TEST(DreamMemory, DreamSamplesTheMaskedRowsInFloat32WithTopPsSort) {
  for (int dtype : {4, 2}) {
    const MemoryEstimate greedy =
        EstimateRequest(DreamConfig(), ShapeOf(Request(generation::SamplerMode::kDream, 32, 64, dtype)));
    const MemoryEstimate sampled =
        EstimateRequest(DreamConfig(), ShapeOf(Request(generation::SamplerMode::kDream, 32, 64, dtype, 0.2)));
    // 64 masked rows (not the 96 of the canvas), whatever the compute dtype: float32 logits, their
    // softmax and the entropy alg's temporaries greedy without top_p; with top_p its sorted
    // logits, int64 order, softmax, cumsum and mask (+ the scaled copy when sampling).
    EXPECT_EQ(PhaseBytes(greedy, "softmax"), 64 * kVocab * (20 + BfHead(dtype))) << dtype;
    EXPECT_EQ(greedy.peak_phase, "softmax");
    EXPECT_EQ(PhaseBytes(sampled, "noise"), 64 * kVocab * (29 + BfHead(dtype))) << dtype;
    EXPECT_EQ(sampled.peak_phase, "noise");
    // Greedy, more than the LLaDA reference's compute-dtype logits and softmax over the canvas
    // (which measured 1.7-4.5x under what dream allocates)...
    const MemoryEstimate llada =
        EstimateRequest(LladaWithDreamShapes(), ShapeOf(Request(generation::SamplerMode::kReference, 32, 64, dtype)));
    EXPECT_GT(greedy.peak, llada.peak) << dtype;
    // ... and no float64 Gumbel noise when sampling.
    GenerationRequest noisy = Request(generation::SamplerMode::kReference, 32, 64, dtype, 0.2);
    noisy.params.top_p = 1.0;
    EXPECT_LT(sampled.peak, EstimateRequest(LladaWithDreamShapes(), ShapeOf(noisy)).peak) << dtype;
  }
}

// The request's top_p / top_k and alg decide the bytes a logit (bench_memory's Dream table).
TEST(DreamMemory, TopPAndAlgDecideTheBytesALogit) {
  const auto per_logit = [](double temperature, double top_p, std::int64_t top_k, generation::DreamAlg alg) {
    GenerationRequest r = Request(generation::SamplerMode::kDream, 32, 64, 4, temperature);
    r.params.top_p = top_p;
    r.params.top_k = top_k;
    r.params.alg = alg;
    const MemoryEstimate e = EstimateRequest(DreamConfig(), ShapeOf(r));
    return PhaseBytes(e, temperature > 0 ? "noise" : "softmax") / (64 * kVocab);
  };
  using generation::DreamAlg;
  for (DreamAlg alg : {DreamAlg::kOrigin, DreamAlg::kMaskgitPlus, DreamAlg::kTopkMargin, DreamAlg::kEntropy}) {
    const bool max_prob = alg == DreamAlg::kOrigin || alg == DreamAlg::kMaskgitPlus;
    EXPECT_EQ(per_logit(0, 1.0, 0, alg), max_prob ? 8u : 20u) << generation::DreamAlgName(alg);
    EXPECT_EQ(per_logit(0, 0.95, 0, alg), 25u) << generation::DreamAlgName(alg);  // the nucleus sorts
    EXPECT_EQ(per_logit(0, 1.0, 50, alg), 25u) << generation::DreamAlgName(alg);   // so does top_k
    EXPECT_EQ(per_logit(0.2, 1.0, 0, alg), max_prob ? 20u : 24u) << generation::DreamAlgName(alg);
    EXPECT_EQ(per_logit(0.2, 0.95, 0, alg), 29u) << generation::DreamAlgName(alg);
  }
  // A request that says nothing (the shape's defaults) counts the largest.
  RequestShape unsaid = ShapeOf(Request(generation::SamplerMode::kDream, 32, 64, 4));
  unsaid.nucleus = RequestShape{}.nucleus;
  unsaid.max_prob_confidence = RequestShape{}.max_prob_confidence;
  EXPECT_EQ(PhaseBytes(EstimateRequest(DreamConfig(), unsaid), "softmax"), 64 * kVocab * 25);
}

TEST(DreamMemory, DreamLogitsGrowWithGenLengthNotPrompt) {
  const auto peak = [](std::int64_t prompt, std::int64_t gen) {
    return EstimateRequest(DreamConfig(), ShapeOf(Request(generation::SamplerMode::kDream, prompt, gen, 4))).logits;
  };
  EXPECT_EQ(peak(32, 128), 2 * peak(32, 64));
  EXPECT_EQ(peak(512, 64), peak(32, 64));
}

TEST(DreamMemory, CacheModesSampleTheWholeCanvasInTheRefreshCallWhenSampling) {
  for (auto mode : {generation::SamplerMode::kDreamPrefixCache, generation::SamplerMode::kDreamDualCache,
                    generation::SamplerMode::kDreamPrefixCacheThreshold,
                    generation::SamplerMode::kDreamDualCacheThreshold}) {
    for (int dtype : {4, 2}) {
      const MemoryEstimate greedy = EstimateRequest(DreamConfig(), ShapeOf(Request(mode, 32, 256, dtype)));
      const MemoryEstimate sampled = EstimateRequest(DreamConfig(), ShapeOf(Request(mode, 32, 256, dtype, 0.2)));
      ASSERT_GT(greedy.kv_cache, 0u);  // the K/V of the canvas, 2 KV heads
      EXPECT_EQ(greedy.kv_cache, 2ull * 4 * (2 * 32) * 288 * dtype);
      // Greedy: the block's 32 rows (the refresh call samples one position), the threshold modes'
      // top probability (logits and softmax) or the entropy alg's temporaries.
      const bool threshold = mode == generation::SamplerMode::kDreamPrefixCacheThreshold ||
                             mode == generation::SamplerMode::kDreamDualCacheThreshold;
      EXPECT_EQ(PhaseBytes(greedy, "softmax") - greedy.kv_cache, 32 * kVocab * ((threshold ? 8 : 20) + BfHead(dtype)));
      // Sampling: [288, V] float32 logits of the refresh call, their scaled copy and top_p's sort;
      // the LLaDA cache modes' block rows (the formula used before) measured up to 6x under it.
      EXPECT_EQ(PhaseBytes(sampled, "noise") - sampled.kv_cache, 288 * kVocab * (29 + BfHead(dtype)));
      EXPECT_EQ(sampled.peak_phase, "noise");
      const MemoryEstimate longer = EstimateRequest(DreamConfig(), ShapeOf(Request(mode, 1024, 256, dtype, 0.2)));
      EXPECT_GT(longer.logits, 4 * sampled.logits);  // the canvas, prompt included
    }
  }
}

TEST(DreamMemory, OtherArchitecturesKeepTheirEstimates) {
  // The same shapes under LLaDA: the block's compute-dtype logits and float64 confidences.
  const MemoryEstimate e = EstimateRequest(
      LladaWithDreamShapes(), ShapeOf(Request(generation::SamplerMode::kDualCache, 32, 256, 4)));
  EXPECT_EQ(PhaseBytes(e, "softmax") - e.kv_cache, 32 * kVocab * (2 * 4 + 16));
}

}  // namespace
}  // namespace unmask::fitting
