#include "common/fitting/memory_model.h"

#include <gtest/gtest.h>

#include "tests/fixtures/tiny_config.h"

#include <algorithm>
#include <numeric>
#include <ostream>

namespace unmask::generation {
// gtest prints a mode by its name.
inline void PrintTo(SamplerMode mode, std::ostream* os) { *os << SamplerModeName(mode); }
}  // namespace unmask::generation

namespace unmask::fitting {
namespace {

using checkpoint::LladaConfig;


RequestShape Shape(std::int64_t prompt, std::int64_t gen, std::int64_t block, SamplerKind kind = SamplerKind::kReference) {
  RequestShape s;
  s.prompt_length = prompt;
  s.gen_length = gen;
  s.block_length = block;
  s.steps = gen;
  s.sampler = kind;
  return s;
}

const SamplerKind kKinds[] = {SamplerKind::kReference, SamplerKind::kBlockLogits, SamplerKind::kPrefixCache,
                              SamplerKind::kDualCache};

TEST(MemoryModel, EveryPartIsLinearInBatch) {
  for (const LladaConfig& config : {testing::SmallConfigWithLladaVocab(), LladaConfig()}) {
    for (SamplerKind kind : kKinds) {
      for (int dtype : {4, 2}) {
        RequestShape one = Shape(32, 128, 32, kind);
        one.compute_dtype_bytes = dtype;
        one.temperature = 0.5;
        RequestShape four = one;
        four.batch = 4;
        const MemoryEstimate a = EstimateRequest(config, one), b = EstimateRequest(config, four);
        SCOPED_TRACE(SamplerKindName(kind));
        EXPECT_EQ(b.peak, 4 * a.peak);
        EXPECT_EQ(b.activations, 4 * a.activations);
        EXPECT_EQ(b.attention_scores, 4 * a.attention_scores);
        EXPECT_EQ(b.logits, 4 * a.logits);
        EXPECT_EQ(b.kv_cache, 4 * a.kv_cache);
        EXPECT_EQ(b.peak_phase, a.peak_phase);
      }
    }
  }
}

TEST(MemoryModel, AttentionScoresAreQuadraticInSequenceLength) {
  const LladaConfig config = LladaConfig();
  const MemoryEstimate a = EstimateRequest(config, Shape(0, 512, 512));
  const MemoryEstimate b = EstimateRequest(config, Shape(0, 1024, 1024));
  EXPECT_EQ(b.attention_scores, 4 * a.attention_scores);
  // Two [B, H, L, L] tensors (scores and probabilities) in the compute dtype.
  EXPECT_EQ(a.attention_scores, 2ull * 32 * 512 * 512 * 4);
  // The rest of the forward is linear in L.
  EXPECT_EQ(b.activations, 2 * a.activations);
}

TEST(MemoryModel, ChunkingBoundsTheScores) {
  const LladaConfig config = LladaConfig();
  RequestShape full = Shape(1024, 1024, 64, SamplerKind::kBlockLogits);
  RequestShape chunked = full;
  chunked.attention_query_chunk = 128;
  const MemoryEstimate f = EstimateRequest(config, full), c = EstimateRequest(config, chunked);
  EXPECT_EQ(c.attention_scores, 2ull * 32 * 128 * 2048 * 4);
  EXPECT_EQ(f.attention_scores, 16 * c.attention_scores);
  EXPECT_LT(c.peak, f.peak);
  EXPECT_EQ(f.peak_phase, "attention");
  // Chunked scores grow linearly, not quadratically, with L.
  RequestShape longer = chunked;
  longer.prompt_length = 3072;  // L = 4096
  EXPECT_EQ(EstimateRequest(config, longer).attention_scores, 2 * c.attention_scores);
  // A chunk that covers every row is no chunking.
  RequestShape wide = full;
  wide.attention_query_chunk = 4096;
  EXPECT_EQ(EstimateRequest(config, wide).attention_scores, f.attention_scores);
  EXPECT_EQ(EstimateRequest(config, wide).peak, f.peak);
}

TEST(MemoryModel, FastModesComputeLogitsForTheBlockOnly) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  RequestShape ref = Shape(32, 256, 32);
  ref.temperature = 1.0;  // the sampled reference: noise over every position, so logits for all
  RequestShape fast = ref;
  fast.sampler = SamplerKind::kBlockLogits;
  const MemoryEstimate r = EstimateRequest(config, ref), f = EstimateRequest(config, fast);
  EXPECT_LT(f.logits, r.logits);
  // The logits rows dominate: the ratio is close to block_length / L.
  const double ratio = static_cast<double>(f.logits) / static_cast<double>(r.logits);
  EXPECT_NEAR(ratio, 32.0 / 288.0, 0.01);
  EXPECT_EQ(f.activations, r.activations);  // the same full forward
  EXPECT_EQ(f.attention_scores, r.attention_scores);
  EXPECT_LT(f.peak, r.peak);
}

// At temperature 0 the executor runs the reference as block_logits' forward (the LM head over the
// current block's rows; step_sampler.cc): the same estimate, phase by phase, with and without
// guidance and logprobs.
TEST(MemoryModel, TheGreedyReferenceIsEstimatedAsBlockLogits) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  for (double cfg : {0.0, 1.5}) {
    for (bool logprobs : {false, true}) {
      RequestShape ref = Shape(32, 256, 32);
      ref.cfg_scale = cfg;
      ref.logprobs = logprobs;
      RequestShape fast = ref;
      fast.sampler = SamplerKind::kBlockLogits;
      const MemoryEstimate r = EstimateRequest(config, ref), f = EstimateRequest(config, fast);
      EXPECT_EQ(r.peak, f.peak) << "cfg " << cfg << " logprobs " << logprobs;
      EXPECT_EQ(r.logits, f.logits);
      EXPECT_EQ(r.peak_phase, f.peak_phase);
      RequestShape sampled = ref;
      sampled.temperature = 0.5;
      EXPECT_GT(EstimateRequest(config, sampled).logits, r.logits);
    }
  }
}

TEST(MemoryModel, LogprobsAddAPhaseOverTheCandidateRowsOnly) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  for (SamplerKind kind : kKinds) {
    RequestShape plain = Shape(32, 256, 32, kind);
    RequestShape asked = plain;
    asked.logprobs = true;
    const MemoryEstimate a = EstimateRequest(config, plain), b = EstimateRequest(config, asked);
    auto phase = [](const MemoryEstimate& e, const std::string& name) -> std::uint64_t {
      for (const auto& p : e.phases)
        if (p.name == name) return p.bytes;
      return 0;
    };
    EXPECT_EQ(phase(a, "logprobs"), 0u);
    ASSERT_GT(phase(b, "logprobs"), 0u);
    EXPECT_GE(b.peak, a.peak);
    // The block's 32 candidate rows in float32, twice (the copy and its log-softmax), over the
    // step's logits, whatever rows the mode's head computes.
    const std::uint64_t candidates = 2ull * 32 * static_cast<std::uint64_t>(config.embedding_size) * 4;
    EXPECT_GE(phase(b, "logprobs") - b.kv_cache, candidates) << SamplerKindName(kind);
    // ... and one of them held until the step has chosen.
    EXPECT_EQ(phase(b, "softmax"), phase(a, "softmax") + candidates / 2) << SamplerKindName(kind);
    EXPECT_EQ(b.activations, a.activations);
  }
}

TEST(MemoryModel, TemperatureAddsFloat64NoiseOverTheLogitsRows) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  RequestShape greedy = Shape(16, 48, 48);
  RequestShape noisy = greedy;
  noisy.temperature = 0.7;
  const MemoryEstimate g = EstimateRequest(config, greedy), n = EstimateRequest(config, noisy);
  const std::uint64_t elements = 1ull * 64 * 126464;  // every position: the noise is drawn over all
  const std::uint64_t block = 1ull * 48 * 126464;     // greedy: the block's rows only
  EXPECT_EQ(g.logits, 2 * block * 4);                 // logits + softmax
  EXPECT_EQ(n.logits, elements * 4 + 5 * elements * 8);  // logits + five float64 arrays
  EXPECT_EQ(n.peak_phase, "noise");
  EXPECT_EQ(g.peak_phase, "softmax");
}

std::uint64_t PhaseBytesOf(const MemoryEstimate& e, const std::string& name) {
  for (const auto& p : e.phases)
    if (p.name == name) return p.bytes;
  ADD_FAILURE() << "no phase " << name;
  return 0;
}

TEST(MemoryModel, GuidanceDoublesTheModelBatch) {
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  for (SamplerKind kind : kKinds) {
    RequestShape cfg = Shape(32, 128, 32, kind);
    cfg.cfg_scale = 1.5;
    RequestShape two = Shape(32, 128, 32, kind);
    two.batch = 2;
    const MemoryEstimate a = EstimateRequest(config, cfg), b = EstimateRequest(config, two);
    EXPECT_EQ(a.activations, b.activations);
    EXPECT_EQ(a.attention_scores, b.attention_scores);
    EXPECT_EQ(a.kv_cache, b.kv_cache);
    const MemoryEstimate plain = EstimateRequest(config, Shape(32, 128, 32, kind));
    EXPECT_GE(a.logits, plain.logits);  // the guided combination (5 B-row arrays) or the float64 softmax
    EXPECT_GT(PhaseBytesOf(a, "head"), PhaseBytesOf(plain, "head"));  // the doubled batch through the LM head
  }
}

TEST(MemoryModel, KvCacheOnlyInCacheModes) {
  LladaConfig config = LladaConfig();
  const std::uint64_t expected = 2ull * 32 * 1 * 4096 * 512 * 2;  // 2 x layers x B x kv x L x bf16
  for (SamplerKind kind : kKinds) {
    RequestShape s = Shape(256, 256, 32, kind);
    s.compute_dtype_bytes = 2;
    const bool cached = kind == SamplerKind::kPrefixCache || kind == SamplerKind::kDualCache;
    EXPECT_EQ(EstimateRequest(config, s).kv_cache, cached ? expected : 0) << SamplerKindName(kind);
  }
  // Grouped KV heads shrink the cache by heads / kv_heads.
  config.n_kv_heads = 8;
  RequestShape s = Shape(256, 256, 32, SamplerKind::kDualCache);
  s.compute_dtype_bytes = 2;
  EXPECT_EQ(EstimateRequest(config, s).kv_cache, expected / 4);
}

TEST(MemoryModel, PeakIsTheLargestPhaseNotTheSum) {
  const LladaConfig config = LladaConfig();
  RequestShape s = Shape(512, 512, 64, SamplerKind::kDualCache);
  s.temperature = 1.0;
  const MemoryEstimate e = EstimateRequest(config, s);
  std::uint64_t largest = 0;
  for (const auto& p : e.phases) {
    largest = std::max(largest, p.bytes);
    EXPECT_GE(p.bytes, e.kv_cache) << p.name;  // the cache is alive in every phase
  }
  EXPECT_EQ(e.peak, largest);
  EXPECT_LT(e.peak, e.activations + e.attention_scores + e.logits + e.kv_cache);
  EXPECT_EQ(e.total(), e.peak + e.weights + e.scratch);
}

TEST(MemoryModel, Bf16HalvesTheComputeDtypeTerms) {
  const LladaConfig config = LladaConfig();
  RequestShape f32 = Shape(128, 256, 32, SamplerKind::kDualCache);
  RequestShape bf16 = f32;
  bf16.compute_dtype_bytes = 2;
  const MemoryEstimate a = EstimateRequest(config, f32), b = EstimateRequest(config, bf16);
  EXPECT_EQ(2 * b.attention_scores, a.attention_scores);
  EXPECT_EQ(2 * b.kv_cache, a.kv_cache);
  EXPECT_LT(b.activations, a.activations);
  EXPECT_LT(b.logits, a.logits);  // the float64 confidences do not halve
}

TEST(MemoryModel, PeakNeverShrinksWhenLengthsGrow) {
  // The clamp search relies on this.
  const LladaConfig config = testing::SmallConfigWithLladaVocab();
  for (SamplerKind kind : kKinds) {
    for (std::int64_t chunk : {0, 64}) {
      std::uint64_t previous = 0;
      for (std::int64_t gen = 1; gen <= 600; gen += 7) {
        RequestShape s = Shape(40, gen, gen, kind);
        s.attention_query_chunk = chunk;
        const std::uint64_t peak = EstimateRequest(config, s).peak;
        EXPECT_GE(peak, previous) << SamplerKindName(kind) << " gen " << gen;
        previous = peak;
      }
      std::uint64_t prev_block = 0;
      for (std::int64_t block : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
        RequestShape s = Shape(40, 256, block, kind);
        s.attention_query_chunk = chunk;
        const std::uint64_t peak = EstimateRequest(config, s).peak;
        EXPECT_GE(peak, prev_block);
        prev_block = peak;
      }
    }
  }
}

TEST(MemoryModel, WeightsAndScratchAreReportedApartFromThePeak) {
  RequestShape s = Shape(10, 32, 32);
  s.weights_bytes = 1000;
  s.scratch_bytes = 24;
  const MemoryEstimate e = EstimateRequest(testing::SmallConfigWithLladaVocab(), s);
  EXPECT_EQ(e.weights, 1000u);
  EXPECT_EQ(e.scratch, 24u);
  EXPECT_EQ(e.total(), e.peak + 1024);
  EXPECT_NE(e.ToString().find("weights"), std::string::npos);
}

TEST(MemoryModel, AbsurdRequestsSaturateInsteadOfWrapping) {
  RequestShape s = Shape(0, std::int64_t{1} << 40, std::int64_t{1} << 40);
  s.batch = std::int64_t{1} << 40;
  const MemoryEstimate e = EstimateRequest(LladaConfig(), s);
  EXPECT_EQ(e.peak, std::numeric_limits<std::uint64_t>::max());
}

TEST(WeightBytes, OrderedByPrecisionAndCloseToParameterBytes) {
  const LladaConfig config = LladaConfig();
  auto bytes = [&](const char* spec) { return *WeightBytes(config, *weights::PrecisionSpec::Parse(spec)); };
  const double params = static_cast<double>(config.parameter_count());
  const std::uint64_t fp32 = bytes("fp32"), bf16 = bytes("bf16"), int8 = bytes("int8"), int4 = bytes("int4");
  EXPECT_NEAR(fp32 / params, 4.0, 0.01);
  EXPECT_NEAR(bf16 / params, 2.0, 0.01);
  EXPECT_LT(int8, bf16);
  EXPECT_LT(int4, int8);
  // int4 leaves the embedding and the head in bf16: 8B LLaDA lands near 5 GB.
  EXPECT_GT(int4, 4.0e9);
  EXPECT_LT(int4, 6.0e9);
  EXPECT_LT(bytes("int4:head:emb"), int4);
}

// LLaDA-MoE-7B-A1B as published (64 experts of 1024, top-8, 16 layers, hidden 2048): the weights
// are its ~7.4 B parameters, nearly all in the experts, and int8 quantizes every expert.
LladaConfig LladaMoe7B() {
  std::string layers = "[1";
  for (int i = 1; i < 16; ++i) layers += ",1";
  auto c = LladaConfig::FromJsonText(
      R"({"architectures": ["LLaDAMoEModelLM"], "model_type": "llada", "hidden_size": 2048,
          "num_attention_heads": 16, "num_key_value_heads": 16, "num_hidden_layers": 16, "vocab_size": 157184,
          "num_experts": 64, "num_experts_per_tok": 8, "expert_intermediate_size": 1024,
          "dense_intermediate_size": 8192, "shared_expert_intermediate_size": null, "qk_layernorm": true,
          "moe_layer_freq": )" + layers + R"(], "rope_theta": 50000, "partial_rotary_factor": 1,
          "max_position_embeddings": 8192, "mask_token_id": 156895, "eos_token_id": 156892})",
      "LLaDA-MoE-7B-A1B");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

TEST(WeightBytes, CountsEveryExpert) {
  const LladaConfig moe = LladaMoe7B();
  const double params = static_cast<double>(moe.parameter_count());
  EXPECT_GT(params, 7.2e9);
  EXPECT_LT(params, 7.5e9);
  const std::uint64_t experts = 16ull * 64 * 3 * 1024 * 2048;  // parameters in the routed experts
  EXPECT_GT(params, static_cast<double>(experts));
  auto bytes = [&](const LladaConfig& c, const char* spec) { return *WeightBytes(c, *weights::PrecisionSpec::Parse(spec)); };
  const std::uint64_t bf16 = bytes(moe, "bf16");
  EXPECT_NEAR(bf16 / params, 2.0, 0.01);
  EXPECT_LT(bytes(moe, "int8"), bf16 - experts) << "each expert's projections are quantized";
  LladaConfig fewer = moe;
  fewer.moe.num_experts = 32;
  EXPECT_GE(bytes(moe, "bf16") - bytes(fewer, "bf16"), 16ull * 32 * 3 * 1024 * 2048 * 2);
}

TEST(MemoryModel, MoeLayersCountTheirRoutedRows) {
  const LladaConfig moe = LladaMoe7B();
  RequestShape s = Shape(64, 256, 32);
  const MemoryEstimate e = EstimateRequest(moe, s);
  // The MoE MLP phase holds top_k copies of the rows three times at once (gathered, the experts'
  // outputs, their concatenation), on top of the block's locals: at least 3 x 8 x 320 x 2048 x 4.
  const auto mlp = std::find_if(e.phases.begin(), e.phases.end(), [](const PhaseBytes& p) { return p.name == "mlp"; });
  ASSERT_NE(mlp, e.phases.end());
  EXPECT_GE(mlp->bytes, 3ull * 8 * 320 * 2048 * 4 + 7ull * 320 * 2048 * 4);
}

// The bench_memory MoE shapes: d_model 256, 4 layers, 64 experts of 128, top-8, LLaDA's vocabulary;
// LLaDA2 with 2 KV heads, 8 groups, a shared expert and a dense first layer.
LladaConfig SmallMoe(checkpoint::Architecture arch, std::int64_t top_k = 8) {
  LladaConfig c = testing::SmallConfigWithLladaVocab();
  c.architecture = arch;
  c.moe.num_experts = 64;
  c.moe.top_k = top_k;
  c.moe.expert_hidden_size = 128;
  c.moe.moe_layers.assign(4, true);
  if (arch == checkpoint::Architecture::kLlada2Moe) {
    c.n_kv_heads = 2;
    c.moe.shared_hidden_size = 128;
    c.moe.n_group = 8;
    c.moe.topk_group = 4;
    c.moe.moe_layers[0] = false;
  }
  return c;
}


TEST(MemoryModel, MoeMlpGrowsWithTopKAndRows) {
  for (auto arch : {checkpoint::Architecture::kLladaMoe, checkpoint::Architecture::kLlada2Moe}) {
    for (int dtype : {4, 2}) {
      RequestShape s = Shape(4000, 64, 32, SamplerKind::kBlockLogits);
      s.attention_query_chunk = 128;
      s.compute_dtype_bytes = dtype;
      const MemoryEstimate top8 = EstimateRequest(SmallMoe(arch), s);
      const MemoryEstimate top16 = EstimateRequest(SmallMoe(arch, 16), s);
      EXPECT_GT(PhaseBytesOf(top16, "mlp"), PhaseBytesOf(top8, "mlp"));
      // Three copies of the routed rows (gathered, the experts' outputs, their concatenation) at least.
      const std::uint64_t slots = 4064ull * 8 * 256 * dtype;
      EXPECT_GE(PhaseBytesOf(top8, "mlp") - top8.kv_cache, 3 * slots);
      // Long prompts: the routed rows, not the block's logits, are the peak.
      EXPECT_EQ(top8.peak_phase, "mlp");
      RequestShape twice = s;
      twice.batch = 2;
      EXPECT_EQ(EstimateRequest(SmallMoe(arch), twice).activations, 2 * top8.activations);
    }
  }
}

TEST(MemoryModel, Llada2MixesTheRoutedRowsInFloat32) {
  // LLaDA2 mixes in float32 whatever the compute dtype: bf16 saves less than half of its MoE block.
  RequestShape s = Shape(4000, 64, 32, SamplerKind::kDualCache);
  s.attention_query_chunk = 128;
  RequestShape bf16 = s;
  bf16.compute_dtype_bytes = 2;
  const LladaConfig llada2 = SmallMoe(checkpoint::Architecture::kLlada2Moe);
  const LladaConfig llada_moe = SmallMoe(checkpoint::Architecture::kLladaMoe);
  const std::uint64_t slots_f32 = 4064ull * 8 * 256 * 4;
  // fp32: the outputs, their slot-ordered copy and the float32 product; bf16: two bf16 copies,
  // the float32 copy and the product: the same bytes.
  EXPECT_GE(EstimateRequest(llada2, bf16).activations, 3 * slots_f32);
  // LLaDA-MoE mixes in the compute dtype: bf16 about halves it (only the router is float32).
  EXPECT_LT(EstimateRequest(llada_moe, bf16).activations, 0.51 * EstimateRequest(llada_moe, s).activations);
}

RequestShape Llada2Shape(std::int64_t prompt, std::int64_t gen, std::int64_t block) {
  RequestShape s = Shape(prompt, gen, block, SamplerKind::kLlada2);
  s.steps = 4;  // per block
  return s;
}

TEST(MemoryModel, Llada2PadsTheCanvasToWholeBlocks) {
  const LladaConfig config = SmallMoe(checkpoint::Architecture::kLlada2Moe);
  // 40 + 64 = 104 tokens: 4 blocks of 32, 128 positions, as 40 + 88 unpadded.
  const MemoryEstimate padded = EstimateRequest(config, Llada2Shape(40, 64, 32));
  const MemoryEstimate whole = EstimateRequest(config, Llada2Shape(40, 88, 32));
  EXPECT_EQ(padded.kv_cache, 2ull * 4 * 2 * 64 * 128 * 4);  // 2 x layers x kv heads x head_dim x 128 x fp32
  EXPECT_EQ(padded.peak, whole.peak);
  EXPECT_EQ(padded.activations, whole.activations);
  EXPECT_LT(EstimateRequest(config, Llada2Shape(40, 56, 32)).kv_cache, padded.kv_cache);  // 96 positions
}

TEST(MemoryModel, Llada2HoldsItsBlockCausalBiasThroughTheForward) {
  const LladaConfig config = SmallMoe(checkpoint::Architecture::kLlada2Moe);
  RequestShape llada2 = Llada2Shape(2048, 64, 32);  // 2112 positions: 66 whole blocks
  llada2.attention_query_chunk = 128;
  RequestShape prefix = llada2;  // the same window and cache without the block-causal bias
  prefix.sampler = SamplerKind::kPrefixCache;
  const MemoryEstimate a = EstimateRequest(config, llada2), b = EstimateRequest(config, prefix);
  EXPECT_EQ(a.kv_cache, b.kv_cache);
  EXPECT_EQ(PhaseBytesOf(a, "mlp") - PhaseBytesOf(b, "mlp"), 2112ull * 2112 * 4);  // float32 [L, L]
  EXPECT_EQ(a.peak_phase, "mlp");
}

TEST(MemoryModel, Llada2SamplesInFloat32WithoutFloat64Noise) {
  const LladaConfig config = SmallMoe(checkpoint::Architecture::kLlada2Moe);
  const std::uint64_t elements = 32ull * 126464;  // one block's logits
  for (int dtype : {4, 2}) {
    RequestShape greedy = Llada2Shape(40, 128, 32);
    greedy.compute_dtype_bytes = dtype;
    RequestShape noisy = greedy;
    noisy.temperature = 0.7;
    const MemoryEstimate g = EstimateRequest(config, greedy), n = EstimateRequest(config, noisy);
    // Greedy: logits, their float32 copy (bf16 only), the float32 softmax.
    EXPECT_EQ(PhaseBytesOf(g, "softmax") - g.kv_cache, elements * (dtype == 4 ? 8 : 10));
    // Sampling: logits, the scaled float32 copy and top_p's sort, indices, softmax, cumsum and mask
    // (RequestShape does not say whether top_p is on).
    EXPECT_EQ(PhaseBytesOf(n, "noise") - n.kv_cache, elements * (dtype + 25));
    EXPECT_EQ(n.peak_phase, "noise");
    // Less than the LLaDA samplers' five float64 arrays of Gumbel noise.
    RequestShape prefix = noisy;
    prefix.sampler = SamplerKind::kPrefixCache;
    EXPECT_LT(n.logits, EstimateRequest(config, prefix).logits);
  }
}

TEST(DequantScratchBytes, LargestQuantizedLayerAtTheComputeWidth) {
  const LladaConfig config = LladaConfig();
  const auto bf16 = *weights::PrecisionSpec::Parse("bf16");
  const auto int4 = *weights::PrecisionSpec::Parse("int4");
  const auto int4_head = *weights::PrecisionSpec::Parse("int4:head");
  EXPECT_EQ(DequantScratchBytes(config, bf16, 4), 0u);
  EXPECT_EQ(DequantScratchBytes(config, int4, 4), 12288ull * 4096 * 4);  // the MLP projections
  EXPECT_EQ(DequantScratchBytes(config, int4, 2), 12288ull * 4096 * 2);
  // The LM head (126464 x 4096) is dequantized 16384 rows at a time (64 Mi elements).
  EXPECT_EQ(DequantScratchBytes(config, int4_head, 2), 16384ull * 4096 * 2);
  EXPECT_EQ(DequantScratchBytes(config, int4_head, 4), 16384ull * 4096 * 4);
}

TEST(DequantChunkRows, AllRowsUpToTheCapThenAsManyAsFit) {
  EXPECT_EQ(weights::DequantChunkRows(12288, 4096), 12288);  // 48 Mi elements: at once
  EXPECT_EQ(weights::DequantChunkRows(16384, 4096), 16384);  // exactly the cap
  EXPECT_EQ(weights::DequantChunkRows(16385, 4096), 16384);
  EXPECT_EQ(weights::DequantChunkRows(126464, 4096), 16384);
  EXPECT_EQ(weights::DequantChunkRows(10, std::int64_t{1} << 30), 1);  // a row above the cap: one at a time
  EXPECT_EQ(weights::DequantChunkRows(7, 0), 7);
}

TEST(HumanBytes, Units) {
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(1536), "1.50 KiB");
  EXPECT_EQ(HumanBytes(8ull << 30), "8.00 GiB");
  EXPECT_EQ(HumanBytes(300ull << 20), "300 MiB");
}

TEST(SamplerKind, NamesAndRules) {
  using generation::SamplerMode;
  auto mode = [](const char* name) { return *generation::ParseSamplerMode(name); };
  EXPECT_EQ(SamplerKindOf(mode("reference")), SamplerKind::kReference);
  EXPECT_EQ(SamplerKindOf(mode("threshold")), SamplerKind::kBlockLogits);
  EXPECT_EQ(SamplerKindOf(mode("block_logits+factor")), SamplerKind::kBlockLogits);
  EXPECT_EQ(SamplerKindOf(mode("prefix_cache+threshold")), SamplerKind::kPrefixCache);
  EXPECT_EQ(SamplerKindOf(mode("dual_cache+factor")), SamplerKind::kDualCache);
  // A bad name is refused where it is parsed: SamplerKindOf only ever sees a mode.
  const auto bad = generation::ParseSamplerMode("fastest");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().field(), "sampler");
  EXPECT_NE(bad.status().message().find("dual_cache"), std::string::npos);
  EXPECT_EQ(WithSamplerKind(mode("threshold"), SamplerKind::kDualCache), SamplerMode::kDualCacheThreshold);
  EXPECT_EQ(WithSamplerKind(mode("reference"), SamplerKind::kDualCache), SamplerMode::kDualCache);
  EXPECT_EQ(WithSamplerKind(mode("prefix_cache+factor"), SamplerKind::kBlockLogits), SamplerMode::kFactor);
  EXPECT_EQ(WithSamplerKind(mode("block_logits+threshold"), SamplerKind::kPrefixCache),
            SamplerMode::kPrefixCacheThreshold);
  EXPECT_EQ(WithSamplerKind(mode("dual_cache"), SamplerKind::kBlockLogits), SamplerMode::kBlockLogits);
}

}  // namespace
}  // namespace unmask::fitting
