// The pieces of a LLaDA block, computed the way the official modeling_llada.py computes them.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace unmask::model {

// RMSNorm: statistics in float32, result cast back to the input dtype, then scaled by `weight`.
at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps);

// SwiGLU's middle, at::silu(gate) * up (gate and up of one shape and dtype). On a CPU, contiguous
// bf16 or float32 go through activation_rows.h (the same bits, one pass, split over the intra-op
// threads); anything else composes ATen's operators.
at::Tensor SiluTimes(const at::Tensor& gate, const at::Tensor& up);

// RoPE tables for positions [0, length): sin and cos of shape [1, 1, length, head_dim], float32,
// half-split layout (the two halves of the head dimension share frequencies).
struct RotaryTables {
  at::Tensor sin, cos;
};
RotaryTables MakeRotaryTables(std::int64_t length, std::int64_t head_dim, double theta, c10::Device device);

// Rotates rows of q or k ([N, heads, head_dim]) in float32 by the rotary table rows of their
// positions (cos, sin: [N, 1, head_dim], rows of a RotaryTables' tables) and returns them in
// their own dtype. Each element's result depends only on its own value and position.
at::Tensor ApplyRotaryRows(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
// Partial RoPE (LLaDA-MoE, LLaDA2): ApplyRotaryRows on the first `rotary_dim` dims of each head
// (cos, sin: [N, 1, rotary_dim], tables made for rotary_dim), the other dims unchanged.
at::Tensor ApplyPartialRotaryRows(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                                  std::int64_t rotary_dim);

// Bidirectional attention. q: [B, H, Tq, hd]; k, v: [B, Hkv, Tk, hd] with H % Hkv == 0.
// key_bias: [B, 1, 1, Tk] additive float bias (0 or a large negative number), [B or 1, 1, Tq, Tk]
// when it differs per query (block-causal), or undefined.
// query_chunk > 0 bounds the score matrix to query_chunk x Tk per head. bf16 on a CPU whose
// few-row path is kAvx512 goes through attention_cpu.h instead (float32 inside, one rounding; no
// score matrix, so query_chunk does not apply); everything else composes ATen's operators.
at::Tensor Attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& key_bias, std::int64_t query_chunk);

// [B, Tk] mask (nonzero = attend) -> [B, 1, 1, Tk] float bias with finfo(float).min where masked;
// undefined in, undefined out.
at::Tensor KeyPaddingBias(const at::Tensor& attention_mask);

// LLaDA2's block-causal mask as an additive bias [1, 1, Tq, Tk]: the query at absolute position
// p (queries at query_offset .. query_offset + Tq - 1, keys at 0 .. Tk - 1) sees the keys of
// blocks <= its own, blocks of `block` positions counted from position 0; finfo(float).min
// elsewhere. Combined with `key_bias` ([B, 1, 1, Tk] or undefined) by the minimum, so a key both
// padded and in a later block stays finite.
at::Tensor WithBlockCausalBias(const at::Tensor& key_bias, std::int64_t query_offset, std::int64_t queries,
                               std::int64_t keys, std::int64_t block, c10::Device device);

}  // namespace unmask::model
