#include "common/model/layers.h"

#include <ATen/ATen.h>
#if __has_include(<ATen/ops/scaled_dot_product_attention.h>)  // PyTorch 2.x
#include <ATen/ops/scaled_dot_product_attention.h>
#define UNMASK_HAVE_SDPA 1
#endif

#include <ATen/Parallel.h>

#include <cmath>
#include <limits>
#include <optional>

#include "common/model/activation_rows.h"
#include "common/model/attention_cpu.h"
#include "common/model/bf16_rows.h"
#include "common/model/small_gemm.h"

namespace unmask::model {

at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const auto dtype = x.scalar_type();
  // bf16 rows on a CPU: bf16_rows.h's two passes around ATen's mean, the same bits in four
  // operators instead of eight.
  if (x.is_cpu() && dtype == at::kBFloat16 && x.is_contiguous() && x.dim() >= 1 && weight.is_cpu() &&
      weight.scalar_type() == at::kBFloat16 && weight.is_contiguous() && weight.numel() == x.size(-1) && x.numel() > 0) {
    const GemmPath path = ActiveGemmPath();
    const std::int64_t d = x.size(-1), rows = x.numel() / d;
    const auto* xp = static_cast<const std::uint16_t*>(x.data_ptr());
    at::Tensor squares = at::empty(x.sizes(), x.options().dtype(at::kFloat));
    SquaresOfBf16(path, xp, x.numel(), squares.data_ptr<float>());
    const at::Tensor variance = squares.mean(-1, /*keepdim=*/true).contiguous();
    at::Tensor out = at::empty_like(x);
    const auto* wp = static_cast<const std::uint16_t*>(weight.data_ptr());
    const float* vp = variance.data_ptr<float>();
    auto* op = static_cast<std::uint16_t*>(out.data_ptr());
    at::parallel_for(0, rows, 64, [&](std::int64_t b, std::int64_t e) {
      RmsNormRowsBf16(path, xp + b * d, e - b, d, vp + b, static_cast<float>(eps), wp, op + b * d);
    });
    return out;
  }
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor variance = xf.pow(2).mean(-1, /*keepdim=*/true);
  xf = xf * at::rsqrt(variance + eps);
  return weight * xf.to(dtype);
}

at::Tensor SiluTimes(const at::Tensor& gate, const at::Tensor& up) {
  const auto dtype = gate.scalar_type();
  const GemmPath path = ActiveGemmPath();
  if (!gate.is_cpu() || !up.is_cpu() || up.scalar_type() != dtype || gate.sizes() != up.sizes() ||
      !gate.is_contiguous() || !up.is_contiguous() || (dtype != at::kBFloat16 && dtype != at::kFloat) ||
      !SiluMulRuns(path))
    return at::silu(gate) * up;
  at::Tensor out = at::empty_like(gate, at::MemoryFormat::Contiguous);
  constexpr std::int64_t kGrain = 16384;  // elements per thread at least: below that one thread is faster
  if (dtype == at::kFloat) {
    const float *g = gate.data_ptr<float>(), *u = up.data_ptr<float>();
    float* o = out.data_ptr<float>();
    at::parallel_for(0, gate.numel(), kGrain, [&](std::int64_t b, std::int64_t e) {
      SiluMulF32(path, g + b, u + b, e - b, o + b);
    });
  } else {
    const auto* g = static_cast<const std::uint16_t*>(gate.data_ptr());
    const auto* u = static_cast<const std::uint16_t*>(up.data_ptr());
    auto* o = static_cast<std::uint16_t*>(out.data_ptr());
    at::parallel_for(0, gate.numel(), kGrain, [&](std::int64_t b, std::int64_t e) {
      SiluMulBf16(path, g + b, u + b, e - b, o + b);
    });
  }
  return out;
}

RotaryTables MakeRotaryTables(std::int64_t length, std::int64_t head_dim, double theta, c10::Device device) {
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  // Same operation order as the reference: 1 / theta^(arange(0, d, 2) / d), outer product with
  // the positions, both halves sharing frequencies.
  at::Tensor exponent = at::arange(0, head_dim, 2, f32) / head_dim;
  at::Tensor inv_freq = at::reciprocal(at::pow(theta, exponent));
  at::Tensor seq = at::arange(length, f32);
  at::Tensor freqs = at::outer(seq, inv_freq);
  at::Tensor positions = at::cat({freqs, freqs}, -1);
  return {positions.sin().unsqueeze(0).unsqueeze(0), positions.cos().unsqueeze(0).unsqueeze(0)};
}

namespace {
at::Tensor RotateHalf(const at::Tensor& x) {
  const auto half = x.size(-1) / 2;
  at::Tensor x1 = x.narrow(-1, 0, half);
  at::Tensor x2 = x.narrow(-1, half, half);
  return at::cat({-x2, x1}, -1);
}
}  // namespace

at::Tensor ApplyRotaryRows(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  // bf16 rows on a CPU: bf16_rows.h's loop, the same bits in one pass instead of eight operators.
  if (x.is_cpu() && x.scalar_type() == at::kBFloat16 && x.dim() == 3 && x.is_contiguous() && x.size(-1) % 2 == 0 &&
      cos.is_cpu() && sin.is_cpu() && cos.scalar_type() == at::kFloat && sin.scalar_type() == at::kFloat &&
      cos.is_contiguous() && sin.is_contiguous() && cos.numel() == x.size(0) * x.size(2) && sin.numel() == cos.numel()) {
    at::Tensor out = at::empty_like(x);
    const std::int64_t heads = x.size(1), hd = x.size(2);
    const auto* xp = static_cast<const std::uint16_t*>(x.data_ptr());
    auto* op = static_cast<std::uint16_t*>(out.data_ptr());
    const float *cp = cos.data_ptr<float>(), *sp = sin.data_ptr<float>();
    at::parallel_for(0, x.size(0), 64, [&](std::int64_t b, std::int64_t e) {
      RotateBf16(ActiveGemmPath(), xp + b * heads * hd, e - b, heads, hd, cp + b * hd, sp + b * hd, op + b * heads * hd);
    });
    return out;
  }
  at::Tensor xf = x.to(at::kFloat);
  return ((xf * cos) + (RotateHalf(xf) * sin)).to(x.scalar_type());
}

at::Tensor ApplyPartialRotaryRows(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                                  std::int64_t rotary_dim) {
  const std::int64_t hd = x.size(-1);
  if (rotary_dim >= hd) return ApplyRotaryRows(x, cos, sin);
  if (rotary_dim <= 0) return x;
  return at::cat({ApplyRotaryRows(x.narrow(-1, 0, rotary_dim), cos, sin), x.narrow(-1, rotary_dim, hd - rotary_dim)},
                 -1);
}

at::Tensor KeyPaddingBias(const at::Tensor& attention_mask) {
  if (!attention_mask.defined()) return at::Tensor();
  at::Tensor m = attention_mask.to(at::kFloat);
  return ((1.0 - m) * std::numeric_limits<float>::lowest()).view({m.size(0), 1, 1, m.size(1)});
}

at::Tensor WithBlockCausalBias(const at::Tensor& key_bias, std::int64_t query_offset, std::int64_t queries,
                               std::int64_t keys, std::int64_t block, c10::Device device) {
  const auto i64 = at::TensorOptions().dtype(at::kLong).device(device);
  const at::Tensor query_block = at::div(at::arange(query_offset, query_offset + queries, i64), block, "floor");
  const at::Tensor key_block = at::div(at::arange(keys, i64), block, "floor");
  const at::Tensor later = key_block.unsqueeze(0) > query_block.unsqueeze(1);  // [Tq, Tk]
  const at::Tensor bias = at::zeros({queries, keys}, at::TensorOptions().dtype(at::kFloat).device(device))
                              .masked_fill(later, std::numeric_limits<float>::lowest())
                              .view({1, 1, queries, keys});
  return key_bias.defined() ? at::minimum(key_bias, bias) : bias;
}

namespace {
at::Tensor AttentionRows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const at::Tensor& key_bias, double scale) {
#ifdef UNMASK_HAVE_SDPA
  // On a GPU, PyTorch's fused attention (flash attention without a padding mask, the
  // memory-efficient kernel with one): no [queries, keys] score tensor and a few launches instead
  // of five. The CPU keeps the explicit formula, whose results the golden tests pin down.
  if (q.is_cuda()) {
    const std::optional<at::Tensor> mask =
        key_bias.defined() ? std::optional<at::Tensor>(key_bias.to(q.scalar_type())) : std::nullopt;
    return at::scaled_dot_product_attention(q, k, v, mask, 0.0, false, scale);
  }
#endif
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * scale;
  if (key_bias.defined()) scores = scores + key_bias.to(scores.scalar_type());
  return at::matmul(at::softmax(scores, -1), v);
}
}  // namespace

namespace {
bool Bf16RowsOnCpu(const at::Tensor& t) {
  return t.is_cpu() && t.scalar_type() == at::kBFloat16 && t.dim() == 4 && t.stride(-1) == 1;
}

// Attention through attention_cpu.h where it applies (bf16 on a CPU whose path is kAvx512),
// otherwise undefined. The result is [B, H, Tq, hd] over a [B, Tq, H, hd] buffer: the rows of
// every head side by side, the layout the output projection reads.
at::Tensor AttentionBf16Cpu(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& key_bias,
                            double scale) {
  if (!Bf16RowsOnCpu(q) || !Bf16RowsOnCpu(k) || !Bf16RowsOnCpu(v) || ActiveGemmPath() != GemmPath::kAvx512)
    return {};
  const std::int64_t b = q.size(0), heads = q.size(1), tq = q.size(2), hd = q.size(3), kv_heads = k.size(1),
                     tk = k.size(2);
  if (!AttendBf16Runs(hd) || kv_heads <= 0 || heads % kv_heads != 0 || k.size(0) != b || v.sizes() != k.sizes() ||
      k.size(3) != hd || tq == 0 || tk == 0)
    return {};
  at::Tensor bias;
  if (key_bias.defined()) {
    if (!key_bias.is_cpu() || key_bias.scalar_type() != at::kFloat || key_bias.dim() != 4) return {};
    bias = key_bias.expand({b, 1, tq, tk});
    if (bias.stride(-1) != 1) return {};
  }
  at::Tensor out = at::empty({b, tq, heads, hd}, q.options());
  const auto* qp = static_cast<const std::uint16_t*>(q.data_ptr());
  const auto* kp = static_cast<const std::uint16_t*>(k.data_ptr());
  const auto* vp = static_cast<const std::uint16_t*>(v.data_ptr());
  auto* op = static_cast<std::uint16_t*>(out.data_ptr());
  const float* bp = bias.defined() ? bias.data_ptr<float>() : nullptr;
  at::parallel_for(0, b * heads, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const std::int64_t n = i / heads, h = i % heads, g = h / (heads / kv_heads);
      AttentionHead head;
      head.q = qp + n * q.stride(0) + h * q.stride(1);
      head.q_stride = q.stride(2);
      head.k = kp + n * k.stride(0) + g * k.stride(1);
      head.k_stride = k.stride(2);
      head.v = vp + n * v.stride(0) + g * v.stride(1);
      head.v_stride = v.stride(2);
      if (bp != nullptr) {
        head.bias = bp + n * bias.stride(0);
        head.bias_stride = bias.stride(2);
      }
      head.out = op + (n * tq * heads + h) * hd;
      head.out_stride = heads * hd;
      AttendBf16(head, tq, tk, hd, static_cast<float>(scale));
    }
  });
  return out.transpose(1, 2);
}
}  // namespace

at::Tensor Attention(const at::Tensor& q, const at::Tensor& k_in, const at::Tensor& v_in,
                     const at::Tensor& key_bias, std::int64_t query_chunk) {
  if (at::Tensor fused = AttentionBf16Cpu(q, k_in, v_in, key_bias, 1.0 / std::sqrt(static_cast<double>(q.size(-1))));
      fused.defined())
    return fused;
  const auto heads = q.size(1);
  at::Tensor k = k_in, v = v_in;
  if (k.size(1) != heads) {  // grouped KV heads: each KV head serves heads / kv_heads queries
    const auto group = heads / k.size(1);
    k = k.repeat_interleave(group, 1);
    v = v.repeat_interleave(group, 1);
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  const auto tq = q.size(2);
  if (query_chunk <= 0 || query_chunk >= tq) return AttentionRows(q, k, v, key_bias, scale);
  std::vector<at::Tensor> parts;
  for (std::int64_t start = 0; start < tq; start += query_chunk) {
    const auto n = std::min(query_chunk, tq - start);
    const bool per_query = key_bias.defined() && key_bias.size(2) > 1;  // block-causal: rows of the chunk
    const at::Tensor bias = per_query ? key_bias.narrow(2, start, n) : key_bias;
    parts.push_back(AttentionRows(q.narrow(2, start, n), k, v, bias, scale));
  }
  return at::cat(parts, 2);
}

}  // namespace unmask::model
