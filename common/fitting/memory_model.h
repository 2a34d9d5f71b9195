// How many bytes a generation request needs on its device, computed from the model config and
// the request alone (no LibTorch): the figure the scheduler clamps against (clamp.h).
//
// What is modelled is what the engine allocates (common/model/llada_model.cc, layers.cc,
// common/sampler/reference_sampler.cc, fast_sampler.cc and the BlockForward of each mode), as
// tensors alive at the same time. Notation: B = batch, B' = 2B with classifier-free guidance
// (the conditional and unconditional copies run as one batch) else B, L = prompt + gen_length,
// d = d_model, H = n_heads, kv = n_kv_heads * head_dim, M = mlp_hidden_size, V = embedding_size
// (rows of the LM head), s = compute dtype bytes (fp32 4, bf16/fp16 2), f = 4 (RMSNorm and RoPE
// compute in float32 whatever s), R = logits rows (the reference at temperature > 0: L; the
// greedy reference and the fast modes: block_length).
//
// A step has phases; the peak is the largest phase plus what persists across them, not the sum
// of everything:
//  - forward, per layer (the largest layer phase counts once: a layer's temporaries are freed
//    before the next layer runs; B'·L·d·s-sized hidden states are what crosses layers):
//      rotary     x, h, q, k, v and RoPE's float32 temporaries of q (4 f-sized copies, plus the
//                 float32 copy and the cast back when s != 4)
//      attention  x, h, q, k, v (k/v expanded to H heads when kv heads are grouped), the scores
//                 AND their softmax (2 · B'·H·rows·L·s: both are alive while probs @ v runs),
//                 the copy of v that the batched matmul makes, and the output; rows = L, or the
//                 attention_query_chunk (with chunking the chunk outputs are concatenated: one
//                 more output-sized tensor)
//      mlp        the block's locals that are still in scope (x, q, k, v, attention output,
//                 residual, normed input) plus gate, up and their product (3 · B'·L·M·s)
//  - logits (R rows; fast modes narrow the hidden states before the head):
//      head       the final hidden states, the normed rows and the logits B'·R·V·s
//      cfg        guidance: the 2B-row logits and the three B-row temporaries of
//                 uncond + (cfg + 1)(cond - uncond): 5 · B·R·V·s
//      noise      temperature > 0: logits + five float64 arrays of B·R·V (logits as float64,
//                 uniform noise, log, negation, power; then exp and the quotient)
//      softmax    logits, softmax probabilities, and the float64 noisy logits when temperature > 0;
//                 the confidences' float64 softmax (2 · B·R·V·8) in the cache modes and the
//                 threshold / factor rules
//    On a MoE layer (LLaDA-MoE, LLaDA2.x) the mlp phase is the routed block instead where that
//    is larger (memory_model.cc, MoeMlpBytes, measured by bench_memory). LLaDA2's block diffusion
//    (llada2, llada21) runs the canvas padded to whole blocks, keeps its K/V, holds a float32
//    block-causal bias through the forward and samples in float32 (no float64 noise). Dream's
//    samplers (dream, dream_prefix_cache, dream_dual_cache, +threshold) take the head over the
//    rows they sample and sample in float32 with top_p's sort (no float64): the masked positions
//    (gen_length) for dream, the block for the cache modes' inner calls, and at temperature > 0
//    every position of the canvas in a block's refresh call (memory_model.cc, DreamSampling).
//  - persistent: the KV cache of prefix_cache / dual_cache, 2 · layers · B' · kv · L · s (filled
//    by a full forward at the start of every block, which is the peak step of those modes; the
//    segment steps in between run fewer query rows against the same cache and need less).
// Not modelled (small against the above): token id tensors, RoPE tables, masks, per-thread
// buffers of the math library, and the allocator. bench/memory measured the model against peak
// RSS on CPU (bench_memory --doc docs/benchmarks.md, section "memory"; 2026-11-28, 111 cases):
//  - with glibc's malloc as the executor sets it (allocator.h: freed blocks under 4 MiB stay in
//    the threads' heaps, up to 32 MiB each): 50 cases above the prediction, 24 by more than 10%,
//    at most 1.38x and 47 MiB (long prompts in query chunks, where the retained blocks are most
//    of it; LLaDA2's window at gen 256; the greedy reference and block_logits at gen 256, 1.2-1.33x,
//    where the forward's small temporaries stay in the heap beneath the block's logits);
//  - when freed tensors go back to the system at once (mallopt(M_MMAP_THRESHOLD, 1 MiB)): mostly
//    within 15%; the greedy reference up to 1.35x and LLaDA2 at gen 128-256 are the exceptions.
// On CUDA the caching allocator's rounding and fragmentation are not modelled (not measured yet).
// Leave that margin in the budget's reserve (the executor's --memory-reserve-bytes, 512 MiB).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/checkpoint/llada_config.h"
#include "common/fitting/sampler_kind.h"
#include "common/util/status.h"
#include "common/quant/quant_policy.h"

namespace unmask::fitting {

struct RequestShape {
  std::int64_t batch = 1;  // rows run together (before guidance doubles them)
  std::int64_t prompt_length = 0;
  std::int64_t gen_length = 128;
  std::int64_t block_length = 128;
  std::int64_t steps = 128;  // does not change the peak (every step allocates the same)
  int compute_dtype_bytes = 4;  // fp32 4, bf16 / fp16 2
  SamplerKind sampler = SamplerKind::kReference;
  double temperature = 0.0;  // > 0: float64 Gumbel noise over the logits rows
  double cfg_scale = 0.0;    // > 0: classifier-free guidance, the batch is doubled
  std::int64_t attention_query_chunk = 0;  // 0: full L x L scores per head
  // The confidences' softmax runs in float64 (block_logits with a threshold or factor rule; the
  // cache modes always do): ShapeOf sets it from the mode.
  bool float64_confidence = false;
  // Log-probabilities asked (GenerationParams::logprobs >= 0): the step's candidate rows are also
  // taken through a float32 log-softmax (phase "logprobs"), held through the noise and softmax
  // phases. ShapeOf sets it.
  bool logprobs = false;
  // Dream's samplers (ShapeOf sets both from the parameters): `nucleus`, top_p < 1 or top_k > 0
  // (the logits are sorted and filtered before the softmax); `max_prob_confidence`, the step's
  // confidence is the top probability (alg origin or maskgit_plus, the threshold modes) rather than
  // an entropy or a margin over the whole softmax. The defaults count the larger.
  bool nucleus = true;
  bool max_prob_confidence = false;
  // > 0: the rows a step takes logits for, whatever the mode: a likelihood job's masked positions
  // (at most its continuation's tokens, common/sampler/likelihood.h), each taken through a float32
  // log-softmax. ShapeOf sets it.
  std::int64_t logits_rows = 0;
  // Given by the caller: the weight segment (WeightBytes, or the manifest's segment_bytes) and
  // the scratch a quantized model dequantizes into (DequantScratchBytes). Both are per device /
  // per process, not per request: they are reported apart from `peak`.
  std::uint64_t weights_bytes = 0;
  std::uint64_t scratch_bytes = 0;
};

// One phase of a step and the bytes alive during it (persistent bytes included).
struct PhaseBytes {
  std::string name;  // "rotary", "attention", "mlp", "head", "cfg", "noise", "softmax"
  std::uint64_t bytes = 0;
};

struct MemoryEstimate {
  std::uint64_t weights = 0;  // RequestShape::weights_bytes, counted once per device
  std::uint64_t scratch = 0;  // RequestShape::scratch_bytes
  // The parts, each at its own largest phase:
  std::uint64_t activations = 0;       // forward temporaries other than scores (hidden, q/k/v, RoPE, MLP)
  std::uint64_t attention_scores = 0;  // one layer's scores + softmax: 2 · B'·H·rows·L·s
  std::uint64_t logits = 0;            // logits rows incl. cfg, softmax and float64 noise
  std::uint64_t kv_cache = 0;          // prefix_cache / dual_cache only
  // What the request itself needs at once: max over `phases` (the KV cache included there).
  std::uint64_t peak = 0;
  std::string peak_phase;
  std::vector<PhaseBytes> phases;

  // Everything on the device for this request: weights + scratch + peak.
  std::uint64_t total() const;
  // "peak 1.2 GiB (attention): activations ..., scores ..., logits ..., kv cache ...; weights ..."
  std::string ToString() const;
};

// Values below their minimum (batch, lengths < 1) are taken as 1; a chunk >= L means no chunking.
MemoryEstimate EstimateRequest(const checkpoint::LladaConfig& config, const RequestShape& shape);

// Bytes of the weight segment a model of `config` gets under `spec` (weights::PlanLayout and
// PlanSegment: data region, manifest and header; bf16 sources assumed).
StatusOr<std::uint64_t> WeightBytes(const checkpoint::LladaConfig& config, const weights::PrecisionSpec& spec);

// Bytes of the buffer quantized linear layers are dequantized into before each matmul
// (common/model/linear.h): the largest quantized layer, or its chunk of DequantChunkRows rows
// (quant_policy.h), at float32 when compute_dtype_bytes is 4, else at bf16; 0 when `spec`
// quantizes nothing. One buffer per thread that runs a forward.
std::uint64_t DequantScratchBytes(const checkpoint::LladaConfig& config, const weights::PrecisionSpec& spec,
                                  int compute_dtype_bytes);

// "512 B", "3.5 MiB", "7.25 GiB".
std::string HumanBytes(std::uint64_t bytes);

}  // namespace unmask::fitting
