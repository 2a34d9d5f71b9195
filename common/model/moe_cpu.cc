#include "common/model/moe_cpu.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <xmmintrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common/model/activation_rows.h"
#include "common/model/bf16_bits.h"
#include "common/model/bf16_rows.h"
#include "common/model/small_gemm.h"
#include "common/model/threading.h"

namespace unmask::model {
namespace {

// The (row, choice) slots, slot = row * top_k + j, grouped by expert with a counting sort
// (stable: rows ascending within an expert, the order of the generic path's sort).
struct SlotGroups {
  std::vector<std::int64_t> sorted;    // slots by (expert, slot)
  std::vector<std::int64_t> start;     // [E + 1]: expert e owns sorted[start[e], start[e + 1])
  std::vector<std::int64_t> position;  // [S]: where slot s sits in `sorted` (its output row)
  std::int64_t count(std::size_t e) const { return start[e + 1] - start[e]; }
};

SlotGroups GroupSlots(const at::Tensor& experts, std::int64_t num_experts) {
  const at::Tensor ids = experts.to(at::kCPU, at::kLong).contiguous();
  const std::int64_t* id = ids.data_ptr<std::int64_t>();
  const std::int64_t slots = ids.numel();
  SlotGroups g;
  g.start.assign(static_cast<std::size_t>(num_experts) + 1, 0);
  for (std::int64_t s = 0; s < slots; ++s) {
    TORCH_CHECK(id[s] >= 0 && id[s] < num_experts, "MoE routing chose expert ", id[s], " of ", num_experts);
    ++g.start[id[s] + 1];
  }
  for (std::int64_t e = 0; e < num_experts; ++e) g.start[e + 1] += g.start[e];
  std::vector<std::int64_t> next(g.start.begin(), g.start.end() - 1);
  g.sorted.resize(slots);
  g.position.resize(slots);
  for (std::int64_t s = 0; s < slots; ++s) {
    const std::int64_t at = next[id[s]]++;
    g.sorted[at] = s;
    g.position[s] = at;
  }
  return g;
}

// A dense weight the CPU can read in place, or undefined (quantized layers dequantize into a
// per-thread scratch buffer that is hot already).
at::Tensor DenseCpuWeight(const Linear& l) {
  if (l.quantized()) return {};
  at::Tensor w = l.weight();
  return w.device().is_cpu() && w.is_contiguous() ? w : at::Tensor();
}

// Asks for an expert's weights to be brought towards this core: at a few rows per expert the
// products wait on memory more than they compute, and the hardware prefetchers stop at every
// page. Measured: about a third off each expert at 4 rows.
void PrefetchWeights(const SwiGluWeights& e) {
  for (const Linear* l : {&e.gate_proj, &e.up_proj, &e.down_proj}) {
    const at::Tensor w = DenseCpuWeight(*l);
    if (!w.defined()) continue;
    const char* p = static_cast<const char*>(w.data_ptr());
    const std::int64_t bytes = w.numel() * static_cast<std::int64_t>(w.element_size());
    for (std::int64_t o = 0; o < bytes; o += 64) _mm_prefetch(p + o, _MM_HINT_T0);
  }
}

// x[i] = h[row of the i-th slot of expert e, from `begin`].
void GatherRows(const at::Tensor& h, const SlotGroups& g, std::int64_t top_k, std::int64_t begin, const at::Tensor& x) {
  const std::int64_t m = x.size(0), row_bytes = h.size(1) * static_cast<std::int64_t>(h.element_size());
  const char* src = static_cast<const char*>(h.data_ptr());
  char* dst = static_cast<char*>(x.data_ptr());
  for (std::int64_t i = 0; i < m; ++i) std::memcpy(dst + i * row_bytes, src + g.sorted[begin + i] / top_k * row_bytes, row_bytes);
}

// Per-thread buffers are kept between calls up to this size; past it (a long prompt's prefill) they
// are let go after the call, so that one large request does not stay resident for good.
constexpr std::size_t kKeptBytes = std::size_t{32} << 20;

template <typename T>
void LetGoIfLarge(std::vector<T>& v) {
  if (v.capacity() * sizeof(T) > kKeptBytes) std::vector<T>().swap(v);
}

// An expert's three products through the few-row kernels, with no ATen operator but the two the
// official SwiGLU applies between them (silu, then the product with up, one pass of
// activation_rows.h with ATen's bits): what Linear::Apply would give each product, without its per-call
// tensors. float32 activations: the products Linear::Apply makes (the few-row kernel, W read as
// stored). bf16 activations: bf16 x times bf16 W summed in float32 (small_gemm.h's SmallGemmBf16),
// rounded to bf16 as a bf16 linear layer's output is; the sums' order differs from the BLAS's, and
// a row's bits do not depend on how many rows share its expert.
class FusedExpert {
 public:
  // Whether `e` can run here: dense CPU weights, and a kernel path that is not the BLAS.
  static bool Runs(const SwiGluWeights& e, at::ScalarType activations, std::int64_t rows) {
    if (ActiveGemmPath() == GemmPath::kBlas) return false;
    for (const Linear* l : {&e.gate_proj, &e.up_proj, &e.down_proj}) {
      const at::Tensor w = DenseCpuWeight(*l);
      if (!w.defined() || w.dim() != 2) return false;
      const at::ScalarType t = w.scalar_type();
      const bool ok = activations == at::kBFloat16 ? t == at::kBFloat16
                                                   : t == at::kBFloat16 || (t == at::kFloat && rows <= kSmallGemmMaxRows);
      if (!ok) return false;
    }
    return true;
  }

  // act = silu(act) * up through activation_rows.h (ATen's bits in one pass; each vector is read
  // before it is written, so in place is safe); false where that loop does not run here.
  static bool SiluMulInPlace(float* act, const float* up, std::int64_t n) {
    return SiluMulF32(ActiveGemmPath(), act, up, n, act);
  }
  static bool SiluMulInPlace(std::uint16_t* act, const std::uint16_t* up, std::int64_t n) {
    return SiluMulBf16(ActiveGemmPath(), act, up, n, act);
  }

  // y ([m, d_model] rows, ldy apart, in the activations' dtype) = the expert over x ([m, d_model]).
  template <typename T>
  static void Apply(const SwiGluWeights& e, const T* x, std::int64_t m, T* y, std::int64_t ldy) {
    const at::Tensor& wg = e.gate_proj.weight();
    const std::int64_t d = wg.size(1), hidden = wg.size(0);
    thread_local std::vector<float> gate, up, down;
    thread_local std::vector<T> gate_t, up_t;
    gate.resize(static_cast<std::size_t>(m * hidden));
    up.resize(gate.size());
    Product(x, m, d, e.gate_proj.weight(), gate.data());
    Product(x, m, d, e.up_proj.weight(), up.data());
    const auto options = at::TensorOptions().dtype(std::is_same_v<T, float> ? at::kFloat : at::kBFloat16);
    T* act = Stored(gate, gate_t);
    const T* up_stored = Stored(up, up_t);
    if (!SiluMulInPlace(act, up_stored, m * hidden)) {
      at::Tensor a = at::from_blob(act, {m, hidden}, options);
      at::silu_(a);
      a.mul_(at::from_blob(const_cast<T*>(up_stored), {m, hidden}, options));
    }
    if constexpr (std::is_same_v<T, float>) {
      Product(act, m, hidden, e.down_proj.weight(), y, ldy);
    } else {
      down.resize(static_cast<std::size_t>(m * d));
      Product(act, m, hidden, e.down_proj.weight(), down.data());
      for (std::int64_t i = 0; i < m; ++i) RoundToBf16(ActiveGemmPath(), down.data() + i * d, d, y + i * ldy);
    }
    LetGoIfLarge(gate);
    LetGoIfLarge(up);
    LetGoIfLarge(down);
    LetGoIfLarge(gate_t);
    LetGoIfLarge(up_t);
  }

 private:
  // The float32 sums in T: the same buffer for float32, else rounded into `rounded`.
  static float* Stored(std::vector<float>& sums, std::vector<float>& /*rounded*/) { return sums.data(); }
  static std::uint16_t* Stored(const std::vector<float>& sums, std::vector<std::uint16_t>& rounded) {
    rounded.resize(sums.size());
    RoundToBf16(ActiveGemmPath(), sums.data(), static_cast<std::int64_t>(sums.size()), rounded.data());
    return rounded.data();
  }
  static void Product(const float* x, std::int64_t m, std::int64_t k, const at::Tensor& w, float* y,
                      std::int64_t ldy = -1) {
    const std::int64_t n = w.size(0);
    if (w.scalar_type() == at::kBFloat16) {
      SmallGemmBf16W(ActiveGemmPath(), x, m, k, Bits(w), n, y, ldy < 0 ? n : ldy);
    } else {
      SmallGemmF32(ActiveGemmPath(), x, m, k, w.data_ptr<float>(), n, y, ldy < 0 ? n : ldy);
    }
  }
  static void Product(const std::uint16_t* x, std::int64_t m, std::int64_t k, const at::Tensor& w, float* y) {
    SmallGemmBf16(ActiveGemmPath(), x, m, k, Bits(w), w.size(0), y, w.size(0));
  }
  static const std::uint16_t* Bits(const at::Tensor& w) {
    return reinterpret_cast<const std::uint16_t*>(w.data_ptr<at::BFloat16>());
  }
};

// Expert e over the rows that chose it, into out's rows [start[e], start[e + 1]).
void RunExpert(const SwiGluWeights& expert, const at::Tensor& h, const SlotGroups& g, std::int64_t top_k,
               std::size_t e, const at::Tensor& out) {
  const std::int64_t begin = g.start[e], m = g.count(e), d = h.size(1);
  if (!FusedExpert::Runs(expert, h.scalar_type(), m)) {
    const at::Tensor x = at::empty({m, d}, h.options());
    GatherRows(h, g, top_k, begin, x);
    out.narrow(0, begin, m).copy_(expert.Apply(x));
    return;
  }
  thread_local at::Tensor x;  // this thread's gathered rows, reused
  if (!x.defined() || x.scalar_type() != h.scalar_type() || x.numel() < m * d) x = at::empty({m * d}, h.options());
  const at::Tensor rows = x.narrow(0, 0, m * d).view({m, d});
  GatherRows(h, g, top_k, begin, rows);
  if (h.scalar_type() == at::kFloat) {
    FusedExpert::Apply(expert, rows.data_ptr<float>(), m, out.data_ptr<float>() + begin * d, d);
  } else {
    auto* y = reinterpret_cast<std::uint16_t*>(out.data_ptr<at::BFloat16>()) + begin * d;
    FusedExpert::Apply(expert, reinterpret_cast<const std::uint16_t*>(rows.data_ptr<at::BFloat16>()), m, y, d);
  }
  if (static_cast<std::size_t>(x.nbytes()) > kKeptBytes) x = at::Tensor();
}

// Every expert that some row chose, spread over the intra-op threads: a thread claims experts one
// at a time (largest first, so that the last ones to finish are short), and claims its next one
// before computing the current one so that it can prefetch it.
void RunExperts(const MoeWeights& w, const at::Tensor& h, const SlotGroups& g, std::int64_t top_k,
                const at::Tensor& out) {
  std::vector<std::size_t> used;
  for (std::size_t e = 0; e < w.experts.size(); ++e)
    if (g.count(e) > 0) used.push_back(e);
  std::stable_sort(used.begin(), used.end(), [&](std::size_t a, std::size_t b) { return g.count(a) > g.count(b); });
  std::atomic<std::size_t> claimed{0};
  ForEachItem(at::get_num_threads(), /*spread=*/true, [&](std::int64_t) {
    std::size_t current = claimed.fetch_add(1);
    while (current < used.size()) {
      const std::size_t next = claimed.fetch_add(1);
      if (next < used.size()) PrefetchWeights(w.experts[used[next]]);
      RunExpert(w.experts[used[current]], h, g, top_k, used[current], out);
      current = next;
    }
  });
}

// Storage of an activation dtype, with ATen's conversions: bf16 widens by a shift and rounds to
// nearest even (NaN to 0x7FC0), as c10::BFloat16 does; a row at a time through bf16_rows.h's
// vector loops.
struct F32 {
  using T = float;
  static float Load(float v) { return v; }
  static float Store(float f) { return f; }
  // y = y + o * w; acc = acc + o * w; y = acc (each element's operations as Load/Store spell them).
  static void AddScaled(float* y, const float* o, float w, std::int64_t n) {
    for (std::int64_t c = 0; c < n; ++c) y[c] = y[c] + o[c] * w;
  }
  static void Accumulate(float* acc, const float* o, float w, std::int64_t n) {
    for (std::int64_t c = 0; c < n; ++c) acc[c] += o[c] * w;
  }
  static void StoreRow(const float* acc, std::int64_t n, float* y) { std::copy(acc, acc + n, y); }
};
struct Bf16 {
  using T = std::uint16_t;
  static float Load(std::uint16_t b) { return WidenBf16(b); }
  static std::uint16_t Store(float f) { return RoundBf16(f); }
  // F32's three, with the bits of Load and Store, 16 or 8 lanes at a time (bf16_rows.h).
  static void AddScaled(std::uint16_t* y, const std::uint16_t* o, float w, std::int64_t n) {
    AddScaledBf16(ActiveGemmPath(), y, o, w, n);
  }
  static void Accumulate(float* acc, const std::uint16_t* o, float w, std::int64_t n) {
    AccumulateScaled(ActiveGemmPath(), acc, o, w, n);
  }
  static void StoreRow(const float* acc, std::int64_t n, std::uint16_t* y) { RoundToBf16(ActiveGemmPath(), acc, n, y); }
};

// Rows [begin, end) of y, kExpertOrder: y = 0, then per chosen expert in ascending id (= ascending
// output position) y = y + (output * weight), each operation rounded to the dtype, as the official
// index_add_ of (output * weight.to(dtype)) does.
template <typename S>
void MixExpertOrder(const typename S::T* out, const SlotGroups& g, const float* weights, std::int64_t top_k,
                    std::int64_t d, std::int64_t begin, std::int64_t end, typename S::T* y) {
  std::vector<std::int64_t> positions(top_k);
  for (std::int64_t i = begin; i < end; ++i) {
    for (std::int64_t j = 0; j < top_k; ++j) positions[j] = g.position[i * top_k + j];
    std::sort(positions.begin(), positions.end());
    typename S::T* yr = y + i * d;
    std::fill(yr, yr + d, S::Store(0.0f));
    for (const std::int64_t p : positions) {
      const float wj = S::Load(S::Store(weights[g.sorted[p]]));
      S::AddScaled(yr, out + p * d, wj, d);
    }
  }
}

// Rows [begin, end) of y, kSlotOrder: in float32, sum over j in routing order of output * weight,
// then rounded to the dtype once (the official float32 sum over the choices).
template <typename S>
void MixSlotOrder(const typename S::T* out, const SlotGroups& g, const float* weights, std::int64_t top_k,
                  std::int64_t d, std::int64_t begin, std::int64_t end, typename S::T* y) {
  std::vector<float> acc(d);
  for (std::int64_t i = begin; i < end; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (std::int64_t j = 0; j < top_k; ++j) {
      const float wj = weights[i * top_k + j];
      S::Accumulate(acc.data(), out + g.position[i * top_k + j] * d, wj, d);
    }
    S::StoreRow(acc.data(), d, y + i * d);
  }
}

template <typename S>
void Mix(const at::Tensor& out, const SlotGroups& g, const at::Tensor& weights, std::int64_t top_k, MoeMixOrder order,
         const at::Tensor& y) {
  const std::int64_t n = y.size(0), d = y.size(1);
  const auto* o = static_cast<const typename S::T*>(out.data_ptr());
  auto* yp = static_cast<typename S::T*>(y.data_ptr());
  const float* wp = weights.data_ptr<float>();
  // Rows split across the pool; each row's sums are one thread's, in the order above.
  at::parallel_for(0, n, std::max<std::int64_t>(1, (std::int64_t{1} << 15) / (top_k * d + 1)),
                   [&](std::int64_t begin, std::int64_t end) {
                     if (order == MoeMixOrder::kExpertOrder) {
                       MixExpertOrder<S>(o, g, wp, top_k, d, begin, end, yp);
                     } else {
                       MixSlotOrder<S>(o, g, wp, top_k, d, begin, end, yp);
                     }
                   });
}

}  // namespace

at::Tensor RoutedExpertsCpu(const MoeWeights& w, const at::Tensor& h_in, const Routing& r, MoeMixOrder order) {
  TORCH_CHECK(h_in.device().is_cpu() && h_in.dim() == 2, "RoutedExpertsCpu: h must be [N, d_model] on the CPU");
  TORCH_CHECK(h_in.scalar_type() == at::kFloat || h_in.scalar_type() == at::kBFloat16,
              "RoutedExpertsCpu: float32 or bf16 activations");
  const at::Tensor h = h_in.contiguous();
  const std::int64_t n = h.size(0), d = h.size(1), top_k = r.experts.size(1);
  const SlotGroups g = GroupSlots(r.experts, static_cast<std::int64_t>(w.experts.size()));
  // The experts' outputs, by expert: a buffer of this thread's, kept between calls up to
  // kKeptBytes. At 256 rows it is 4 MiB, as large as glibc's mmap threshold (allocator.h): a fresh
  // one was mapped and faulted in at every call, 1,024 page faults that took half the layer's time
  // on a KVM guest. Past the cap it is made per call.
  const std::int64_t need = n * top_k * d;
  thread_local at::Tensor out_buffer;
  at::Tensor out_storage;
  if (static_cast<std::size_t>(need) * h.element_size() > kKeptBytes) {
    out_storage = at::empty({need}, h.options());
  } else {
    if (!out_buffer.defined() || out_buffer.scalar_type() != h.scalar_type() || out_buffer.numel() < need) {
      out_buffer = at::Tensor();  // the old one goes first
      out_buffer = at::empty({need}, h.options());
    }
    out_storage = out_buffer;
  }
  const at::Tensor out = out_storage.narrow(0, 0, need).view({n * top_k, d});
  RunExperts(w, h, g, top_k, out);
  const at::Tensor weights = r.weights.to(at::kCPU, at::kFloat).contiguous();
  at::Tensor y = at::empty_like(h);
  if (h.scalar_type() == at::kFloat) {
    Mix<F32>(out, g, weights, top_k, order, y);
  } else {
    Mix<Bf16>(out, g, weights, top_k, order, y);
  }
  return y;
}

}  // namespace unmask::model
