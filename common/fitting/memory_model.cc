#include "common/fitting/memory_model.h"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <limits>

#include "common/segment/layout.h"
#include "common/segment/segment_format.h"

namespace unmask::fitting {
namespace {

using u64 = std::uint64_t;
constexpr u64 kMax = std::numeric_limits<u64>::max();
constexpr u64 kF32 = 4;  // RMSNorm and RoPE compute in float32
constexpr u64 kF64 = 8;  // Gumbel noise is float64

// Saturating arithmetic: absurd requests give "does not fit", never a wrapped small number.
u64 Mul(std::initializer_list<u64> xs) {
  u64 r = 1;
  for (u64 x : xs) {
    if (x != 0 && r > kMax / x) return kMax;
    r *= x;
  }
  return r;
}
u64 Add(std::initializer_list<u64> xs) {
  u64 r = 0;
  for (u64 x : xs) r = (x > kMax - r) ? kMax : r + x;
  return r;
}
u64 AtLeast1(std::int64_t v) { return v < 1 ? 1 : static_cast<u64>(v); }

struct ForwardPhases {
  u64 rotary = 0, attention = 0, mlp = 0;  // bytes alive, scores included in attention
  u64 scores = 0;                          // the scores part of attention
};

// The MLP phase of a MoE layer (common/model/moe.cc, MoeForward) over n = b·seq rows with
// k = top_k slots each, on top of `base` (the block's locals). Measured against peak RSS by
// bench_memory (LLaDA-MoE and LLaDA2 tables). Alive throughout: the routing and the slots' sort
// order (n·k·(4 + 8 + 8)). Then the largest of its sub-phases, each freeing the one before:
//  - router: LLaDA-MoE the logits and their float32 softmax (n·E·(s + 4)); LLaDA2 in float32
//    the logits, sigmoid, biased and masked choice (4·n·E·4) and the rows widened to float32;
//  - experts: the routed rows gathered (n·k·d·s), the experts' outputs so far, and one expert's
//    gate, silu, up and product, alive together in one expression (4·c·m·s, c <= n rows); at
//    the concatenation the gathered rows, the parts and the result (3·n·k·d·s);
//  - mixing, with the outputs still alive: LLaDA-MoE the weighted outputs and the zeroed sum
//    (n·k·d·s + n·d·s); LLaDA2 the outputs back in slot order, their float32 copy (none when s
//    is 4) and the float32 product (n·k·d·(s + 4 [+ 4]));
//  - shared expert (the outputs still alive): its gate, silu, up and product (4·n·m_shared·s),
//    its output, the mixed rows and their sum.
u64 MoeMlpBytes(const checkpoint::LladaConfig& c, u64 b, u64 seq, u64 s, u64 base) {
  const u64 n = Mul({b, seq}), d = AtLeast1(c.d_model), k = AtLeast1(c.moe.top_k);
  const u64 experts = AtLeast1(c.moe.num_experts), m = AtLeast1(c.moe.expert_hidden_size);
  const u64 slots = Mul({n, k, d, s});  // one copy of the routed rows in the compute dtype
  const u64 hidden = Mul({n, d, s});
  const bool llada2 = c.architecture == checkpoint::Architecture::kLlada2Moe;
  const u64 routing = Mul({n, k, 20});
  const u64 router = llada2 ? Add({Mul({4, n, experts, kF32}), s != kF32 ? Mul({n, d, kF32}) : 0})
                            : Mul({n, experts, s + kF32});
  const u64 gather = Add({Mul({2, slots}), std::max(slots, Mul({4, n, m, s}))});
  const u64 float_copy = s != kF32 ? Mul({n, k, d, kF32}) : 0;
  const u64 mixing = llada2 ? Add({Mul({2, slots}), float_copy, Mul({n, k, d, kF32})}) : Add({Mul({2, slots}), hidden});
  const u64 shared_width = static_cast<u64>(std::max<std::int64_t>(0, c.moe.shared_hidden_size));
  const u64 shared = shared_width > 0 ? Add({slots, Mul({3, hidden}), Mul({4, n, shared_width, s})}) : 0;
  return Add({base, routing, std::max({router, gather, mixing, shared})});
}

bool HasDenseMlp(const checkpoint::LladaConfig& c) {
  if (c.architecture == checkpoint::Architecture::kLlada) return true;
  for (std::int64_t i = 0; i < c.n_layers; ++i) {
    if (!c.moe.is_moe_layer(i)) return true;
  }
  return false;
}

// One layer of a forward over `rows` = L positions of a batch of `b` (already doubled for cfg).
// kv_in_cache: K/V of the layer go into the cache (counted there, not here).
ForwardPhases ForwardLayer(const checkpoint::LladaConfig& c, u64 b, u64 seq, u64 s, std::int64_t chunk,
                           bool kv_in_cache) {
  const u64 d = AtLeast1(c.d_model), heads = AtLeast1(c.n_heads), hd = AtLeast1(c.head_dim());
  const u64 kvd = Mul({AtLeast1(c.n_kv_heads), hd}), mlp = AtLeast1(c.mlp_hidden_size);
  const u64 hidden = Mul({b, seq, d, s});             // x, h, q, the attention output, ...
  const u64 one_kv = Mul({b, seq, kvd, s});           // k or v
  const u64 kv_live = kv_in_cache ? 0 : 2 * one_kv;   // k and v while the block runs
  const bool wide = s != kF32;                        // RoPE copies to float32 and back
  const u64 rope_tmp = Add({Mul({b, seq, d, kF32, wide ? 5u : 4u}), wide ? hidden : 0});

  ForwardPhases p;
  p.rotary = Add({Mul({3, hidden}), kv_live, rope_tmp});  // x, h, q (+ k, v) + RoPE temporaries

  const bool grouped = c.n_kv_heads < c.n_heads;
  const u64 expanded = grouped ? Mul({2, b, heads, seq, hd, s}) : 0;  // repeat_interleave'd k, v
  const bool chunked = chunk > 0 && static_cast<u64>(chunk) < seq;
  const u64 rows = chunked ? static_cast<u64>(chunk) : seq;
  p.scores = Mul({2, b, heads, rows, seq, s});  // scores and softmax(scores)
  const u64 v_copy = grouped ? 0 : one_kv;      // matmul's contiguous copy of the transposed v
  const u64 chunk_out = chunked ? Mul({b, heads, rows, hd, s}) : 0;
  const u64 scores_phase = Add({Mul({3, hidden}), kv_live, expanded, p.scores, v_copy, hidden, chunk_out});
  const u64 concat_phase = chunked ? Add({Mul({3, hidden}), kv_live, expanded, Mul({2, hidden})}) : 0;
  p.attention = std::max(scores_phase, concat_phase);

  // x, q, attention output, residual, normed input, ff_out output and the sum (7 hidden-sized),
  // k and v, then gate, up and gate * up; a MoE layer's block instead where that is larger.
  const u64 locals = Add({Mul({7, hidden}), kv_live});
  p.mlp = HasDenseMlp(c) ? Add({locals, Mul({3, b, seq, mlp, s})}) : 0;
  if (c.moe.num_experts > 0) p.mlp = std::max(p.mlp, MoeMlpBytes(c, b, seq, s, locals));
  return p;
}

// LLaDA2's block-causal attention bias (layers.cc, WithBlockCausalBias): float32 [seq, seq],
// built once per forward and alive through every layer; where the scores are not float32 each
// query chunk's rows of it are cast to s while they are added.
void AddCausalBias(ForwardPhases& f, u64 seq, u64 s, std::int64_t chunk) {
  const u64 bias = Mul({seq, seq, kF32});
  const u64 query_rows = chunk > 0 && static_cast<u64>(chunk) < seq ? static_cast<u64>(chunk) : seq;
  f.rotary = Add({f.rotary, bias});
  f.attention = Add({f.attention, bias, s != kF32 ? Mul({query_rows, seq, s}) : 0});
  f.mlp = Add({f.mlp, bias});
}

struct SamplePhases {
  u64 noise = 0, softmax = 0;
};

// LLaDA2's sampler (llada2_sampler.cc, Sample) over its block's `row_logits` logits works in
// float32 whatever s, with no float64 noise: greedy, the logits, their float32 copy (none when s
// is 4) and the softmax. With temperature the logits and the scaled float32 copy, then the
// largest of: the probabilities and multinomial's exponential draws (s + 12 bytes a logit), and
// top_p's nucleus (sorted logits, int64 order, softmax, cumsum, bool mask: s + 25). RequestShape
// does not say whether top_p is on, so the larger is counted: without it this is ~1.8x what is
// measured, with it exact (bench_memory); top_k with top_p adds its float32 copy (~15% more).
SamplePhases Llada2Sampling(u64 row_logits, u64 s, bool noise) {
  if (noise) {
    const u64 bytes = Mul({row_logits, s + kF32 /* scaled */ + 3 * kF32 /* sorted, softmax, cumsum */ + kF64 + 1});
    return {bytes, bytes};
  }
  return {0, Mul({row_logits, s + kF32 + (s != kF32 ? kF32 : 0)})};
}

// Dream's samplers (dream_sampler.cc, dream_cache_sampler.cc; dream_sampling.cc, SampleTokens)
// run the head over the rows they sample only and sample float32 logits whatever s, with no
// float64. The rows, per sequence: dream (and a Dream mode without a cache) the masked positions,
// all of gen_length at the first step, not the prompt; the cache modes' inner calls the block's
// masked positions; at temperature > 0 a block's refresh call samples EVERY position of the
// canvas ([B, seq, V] float32: its Categorical draws must line up with the official code's),
// greedy only the block's first position.
u64 DreamLogitRows(SamplerKind kind, u64 gen, u64 block, u64 seq, bool noise) {
  if (kind == SamplerKind::kPrefixCache || kind == SamplerKind::kDualCache) return noise ? seq : block;
  return gen;
}

// The bytes a logit of those rows at SampleTokens' largest moment (measured by bench_memory, the
// Dream table):
//  - greedy: the float32 logits, then top_p's nucleus (sorted 4, int64 order 8, their softmax 4,
//    cumsum 4, bool mask 1): 25; without a nucleus the softmax and the entropy alg's probs + eps,
//    log and product (4 + 4 + 3·4), or topk_margin's sorted probabilities and their order: 20;
//    the top probability alone (origin, maskgit_plus, the threshold modes): logits and softmax, 8;
//  - temperature > 0: the logits and their scaled copy, then top_p's nucleus: 4 + 4 + 21 = 29;
//    without a nucleus the softmax, its normalised copy and multinomial's exponential draws, 20,
//    and the entropy or margin after them, 24.
// At bf16 the head's output (s bytes a logit) stays alive beside its float32 copy throughout:
// counted on top (the bf16 greedy rows measured up to 1.11x the float32 count without it).
SamplePhases DreamSampling(u64 row_logits, u64 s, bool noise, bool nucleus, bool max_prob) {
  const u64 per_logit = nucleus ? (noise ? 2 * kF32 + 21 : kF32 + 21)
                        : noise ? (max_prob ? 20 : 24)
                                : (max_prob ? 2 * kF32 : 20);
  const u64 bytes = Mul({row_logits, per_logit + (s != kF32 ? s : 0)});
  return {noise ? bytes : 0, bytes};
}

}  // namespace

std::uint64_t MemoryEstimate::total() const { return Add({weights, scratch, peak}); }

std::string MemoryEstimate::ToString() const {
  std::string out = "peak " + HumanBytes(peak) + " (" + peak_phase + "): activations " + HumanBytes(activations) +
                    ", attention scores " + HumanBytes(attention_scores) + ", logits " + HumanBytes(logits);
  if (kv_cache) out += ", kv cache " + HumanBytes(kv_cache);
  out += "; weights " + HumanBytes(weights);
  if (scratch) out += ", dequantization scratch " + HumanBytes(scratch);
  return out;
}

MemoryEstimate EstimateRequest(const checkpoint::LladaConfig& config, const RequestShape& shape) {
  MemoryEstimate e;
  e.weights = shape.weights_bytes;
  e.scratch = shape.scratch_bytes;

  const u64 s = shape.compute_dtype_bytes < 1 ? 1 : static_cast<u64>(shape.compute_dtype_bytes);
  const u64 batch = AtLeast1(shape.batch);
  const bool cfg = shape.cfg_scale > 0;
  const bool noise = shape.temperature > 0;
  const u64 model_batch = cfg ? 2 * batch : batch;
  const u64 gen = AtLeast1(shape.gen_length);
  const bool llada2 = shape.sampler == SamplerKind::kLlada2;
  const u64 tokens = Add({shape.prompt_length > 0 ? static_cast<u64>(shape.prompt_length) : 0, gen});
  // LLaDA2 runs the canvas padded to whole blocks (counted from position 0), a block's logits at a time.
  const u64 block = llada2 ? AtLeast1(shape.block_length) : std::min<u64>(AtLeast1(shape.block_length), gen);
  const u64 seq = llada2 ? Mul({(tokens + block - 1) / block, block}) : tokens;
  const bool cached = llada2 || shape.sampler == SamplerKind::kPrefixCache || shape.sampler == SamplerKind::kDualCache;

  const u64 kvd = Mul({AtLeast1(config.n_kv_heads), AtLeast1(config.head_dim())});
  e.kv_cache = cached ? Mul({2, AtLeast1(config.n_layers), model_batch, kvd, seq, s}) : 0;

  ForwardPhases f = ForwardLayer(config, model_batch, seq, s, shape.attention_query_chunk, cached);
  if (llada2) AddCausalBias(f, seq, s, shape.attention_query_chunk);
  e.attention_scores = f.scores;
  e.activations = std::max({f.rotary, f.attention - f.scores, f.mlp});

  // Logits rows: the fast modes narrow to the block. So does the greedy reference: at temperature
  // 0 the executor runs it as block_logits' forward without early stop (step_sampler.cc), and
  // bench_memory measured it at block_logits' figure; with temperature the reference draws its
  // noise over every position (the official random stream) and computes them all.
  // Dream: the rows its samplers take logits for (DreamLogitRows), sampled in float32.
  const bool dream = config.architecture == checkpoint::Architecture::kDream && !llada2;
  const bool every_row = shape.sampler == SamplerKind::kReference && noise;
  const bool fixed_rows = shape.logits_rows > 0;
  const u64 rows = fixed_rows ? static_cast<u64>(shape.logits_rows)
                   : dream    ? DreamLogitRows(shape.sampler, gen, block, seq, noise)
                   : every_row ? seq
                               : block;
  const u64 vocab = AtLeast1(config.embedding_size), d = AtLeast1(config.d_model);
  const u64 row_logits = Mul({batch, rows, vocab});  // elements after guidance is combined
  const u64 head = Add({Mul({model_batch, seq, d, s}), Mul({model_batch, rows, d, 2 * kF32 + s}),
                        Mul({model_batch, rows, vocab, s})});
  const u64 cfg_phase = cfg ? Mul({5, row_logits, s}) : 0;
  // The fast modes with a cache or a threshold / factor rule take the confidences' softmax in
  // float64 (fast_sampler.cc); plain block_logits keeps the reference's dtype.
  const bool f64_confidence = (cached && !llada2) || shape.float64_confidence;
  const SamplePhases sample =
      llada2  ? Llada2Sampling(row_logits, s, noise)
      : dream ? DreamSampling(row_logits, s, noise, shape.nucleus, shape.max_prob_confidence)
              : SamplePhases{noise ? Add({Mul({row_logits, s}), Mul({5, row_logits, kF64})}) : 0,
                             Add({Mul({2, row_logits, s}), noise ? Mul({row_logits, kF64}) : 0,
                                  f64_confidence ? Mul({row_logits, 2 * kF64}) : 0})};
  // Logprobs: the candidates' rows (the block's; Dream's masked rows) in float32 and their
  // log-softmax, taken while the step's logits are alive (step_logprobs.cc); the log-softmax is
  // held until the step has chosen, through its noise and softmax.
  const u64 candidates = Mul({batch, dream || fixed_rows ? rows : std::min(rows, block), vocab});
  const u64 logprobs_phase = shape.logprobs ? Add({Mul({row_logits, s}), Mul({2, candidates, kF32})}) : 0;
  const u64 held = shape.logprobs ? Mul({candidates, kF32}) : 0;
  const u64 noise_phase = sample.noise > 0 ? Add({sample.noise, held}) : 0;
  const u64 softmax_phase = Add({sample.softmax, held});
  e.logits = std::max({head, cfg_phase, noise_phase, softmax_phase, logprobs_phase});

  auto phase = [&](const char* name, u64 bytes) { e.phases.push_back({name, Add({bytes, e.kv_cache})}); };
  phase("rotary", f.rotary);
  phase("attention", f.attention);
  phase("mlp", f.mlp);
  phase("head", head);
  if (cfg) phase("cfg", cfg_phase);
  if (noise) phase("noise", noise_phase);
  phase("softmax", softmax_phase);
  if (shape.logprobs) phase("logprobs", logprobs_phase);
  for (const auto& p : e.phases) {
    if (p.bytes > e.peak) {
      e.peak = p.bytes;
      e.peak_phase = p.name;
    }
  }
  return e;
}

StatusOr<std::uint64_t> WeightBytes(const checkpoint::LladaConfig& config, const weights::PrecisionSpec& spec) {
  UNMASK_ASSIGN_OR_RETURN(weights::Manifest manifest, weights::PlanLayout(config, spec));
  manifest.config_json = config.ToJsonText();  // the segment carries it; it is part of the size
  const weights::SegmentPlan plan = weights::PlanSegment(manifest);
  return plan.segment_bytes;
}

std::uint64_t DequantScratchBytes(const checkpoint::LladaConfig& config, const weights::PrecisionSpec& spec,
                                  int compute_dtype_bytes) {
  u64 largest = 0;
  for (const auto& t : checkpoint::ExpectedTensors(config)) {
    if (weights::StorageFor(spec, t.name, t.shape).scheme == weights::QuantScheme::kNone) continue;
    // A quantized embedding table dequantizes only the rows it looks up, unless it is also the head.
    if (weights::ClassifyTensor(t.name) == weights::TensorRole::kEmbedding && !config.weight_tying) continue;
    // 2-D (only those are quantized): the rows dequantized at once times the columns.
    const std::int64_t rows = t.shape.empty() ? 1 : t.shape.front(), cols = t.shape.size() < 2 ? 1 : t.shape[1];
    const u64 elements = Mul({AtLeast1(weights::DequantChunkRows(rows, cols)), AtLeast1(cols)});
    largest = std::max(largest, elements);
  }
  return Mul({largest, compute_dtype_bytes == 4 ? 4u : 2u});
}

std::string HumanBytes(std::uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 6) {
    v /= 1024.0;
    ++unit;
  }
  char buf[32];
  if (unit == 0) {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, kUnits[unit]);
  }
  return buf;
}

}  // namespace unmask::fitting
