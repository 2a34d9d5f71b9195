#include "tools/make_model/fast_init.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>

#include "tools/make_model/half_bits.h"

namespace unmask::tools {
namespace {

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;
constexpr std::size_t kBlockPairs = 256;  // pairs drawn per step; the block stays in L1

// splitmix64's finalizer.
inline std::uint64_t Mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t ChunkKey(std::uint64_t seed, std::uint64_t tensor, std::uint64_t chunk) {
  return Mix64(Mix64(Mix64(seed + kGolden) + tensor * kGolden) + chunk);
}

// ln(x) for normal x in (0, 1]: Cephes' logf, inline (no libm call) so that the block loop
// vectorizes and the bytes do not depend on the C library.
inline float FastLog(float x) {
  std::int32_t bits;
  std::memcpy(&bits, &x, 4);
  std::int32_t e = (bits >> 23) - 127;
  // The mantissa m in [sqrt(1/2), sqrt(2)), chosen by integer compares (no float branch).
  const std::int32_t big = (bits & 0x7fffff) > 0x3504f3 ? 1 : 0;  // mantissa > sqrt(2)
  const std::int32_t mbits = (bits & 0x7fffff) | (big ? 0x3f000000 : 0x3f800000);
  float m;
  std::memcpy(&m, &mbits, 4);
  e += big;
  const float f = m - 1.0f, z = f * f, fe = static_cast<float>(e);
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  const float y = f * z * p + fe * -2.12194440e-4f - 0.5f * z;
  return f + y + fe * 0.693359375f;
}

// Box-Muller on the 24-bit uniforms a (radius) and b (2 bits: the quadrant, 22 bits: the angle
// phi in [-pi/4, pi/4) within it; sin and cos of phi by Taylor polynomials): two normals times std.
inline void BoxMuller(std::int32_t a, std::int32_t b, float std, float* x, float* y) {
  const float u1 = static_cast<float>(a + 1) * 0x1p-24f;  // (0, 1]
  const float radius = std * std::sqrt(std::fabs(-2.0f * FastLog(u1)));  // fabs: ln(1) is 0
  const float phi = (static_cast<float>(b & 0x3fffff) * 0x1p-22f - 0.5f) * 1.57079633f;
  const float p2 = phi * phi;
  const float s = radius * phi * (1.0f + p2 * (-1.0f / 6 + p2 * (1.0f / 120 + p2 * (-1.0f / 5040))));
  const float c = radius * (1.0f + p2 * (-0.5f + p2 * (1.0f / 24 + p2 * (-1.0f / 720 + p2 * (1.0f / 40320)))));
  // (c, s) turned q = b >> 22 quarter turns, by bit selects (branch-free, so the loop vectorizes).
  std::int32_t cb, sb;
  std::memcpy(&cb, &c, 4);
  std::memcpy(&sb, &s, 4);
  const std::int32_t odd = -((b >> 22) & 1), half_turn = ((b >> 23) & 1) << 31;
  const std::int32_t xb = ((cb & ~odd) | ((sb ^ INT32_MIN) & odd)) ^ half_turn;  // odd: -s
  const std::int32_t yb = ((sb & ~odd) | (cb & odd)) ^ half_turn;                // odd: c
  std::memcpy(x, &xb, 4);
  std::memcpy(y, &yb, 4);
}

template <checkpoint::DType kDType>
inline void Store(std::uint8_t* dst, std::size_t i, float v) {
  if constexpr (kDType == checkpoint::DType::kF32) {
    std::memcpy(dst + 4 * i, &v, 4);
  } else {
    const std::uint16_t h = FloatToHalfBits(v, kDType);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

// What one tensor's chunks need to know.
struct FastTensor {
  std::uint8_t* dst = nullptr;
  std::size_t n = 0;          // values
  std::size_t zero_from = 0;  // values at and after this index are 0 (the inactive LM head rows)
  bool is_norm = false;       // all 1.0
  std::uint64_t index = 0;    // in the spec list
};

// Values [c * kFastInitChunk, ...) of the tensor; pair j of the chunk comes from draw j + 1 of
// the chunk's stream (counter-based: Mix64(key + (j + 1) * golden)).
template <checkpoint::DType kDType>
void FillChunk(const FastTensor& t, std::size_t c, std::uint64_t seed, float std) {
  const std::size_t begin = c * kFastInitChunk;
  const std::size_t end = std::min(t.n, begin + kFastInitChunk);
  std::uint8_t* const dst = t.dst;  // a local, so that stores through it cannot change it
  if (t.is_norm) {
    for (std::size_t i = begin; i < end; ++i) Store<kDType>(dst, i, 1.0f);
    return;
  }
  const std::size_t cut = std::min(end, std::max(begin, t.zero_from));
  const std::uint64_t key = ChunkKey(seed, t.index, c);
  alignas(64) std::int32_t a[kBlockPairs], b[kBlockPairs];
  alignas(64) float values[2 * kBlockPairs];
  for (std::size_t i = begin, pair = 0; i < cut; i += 2 * kBlockPairs, pair += kBlockPairs) {
    for (std::size_t j = 0; j < kBlockPairs; ++j) {
      const std::uint64_t r = Mix64(key + (pair + j + 1) * kGolden);
      a[j] = static_cast<std::int32_t>(r >> 40);
      b[j] = static_cast<std::int32_t>((r >> 16) & 0xffffff);
    }
    for (std::size_t j = 0; j < kBlockPairs; ++j) BoxMuller(a[j], b[j], std, &values[2 * j], &values[2 * j + 1]);
    const std::size_t m = std::min(2 * kBlockPairs, cut - i);
    for (std::size_t j = 0; j < m; ++j) Store<kDType>(dst, i + j, values[j]);
  }
  for (std::size_t i = cut; i < end; ++i) Store<kDType>(dst, i, 0.0f);
}

void FillChunkOf(const FastTensor& t, std::size_t c, checkpoint::DType dtype, std::uint64_t seed, float std) {
  switch (dtype) {
    case checkpoint::DType::kBF16: return FillChunk<checkpoint::DType::kBF16>(t, c, seed, std);
    case checkpoint::DType::kF16: return FillChunk<checkpoint::DType::kF16>(t, c, seed, std);
    default: return FillChunk<checkpoint::DType::kF32>(t, c, seed, std);
  }
}

// Runs body(chunk) for every chunk in [0, chunks) on up to `threads` threads, which take the
// next chunk as they finish one.
template <typename Body>
void ForEachChunk(std::size_t chunks, int threads, const Body& body) {
  const std::size_t workers = std::min<std::size_t>(chunks, static_cast<std::size_t>(std::max(1, threads)));
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t c = next.fetch_add(1); c < chunks; c = next.fetch_add(1)) body(c);
  };
  std::vector<std::thread> pool;
  for (std::size_t k = 1; k < workers; ++k) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
}

}  // namespace

checkpoint::TensorFiller MakeFastFiller(const MakeModelOptions& o, const std::vector<checkpoint::TensorSpec>& specs) {
  auto index = std::make_shared<std::unordered_map<std::string, std::uint64_t>>();
  for (std::size_t k = 0; k < specs.size(); ++k) (*index)[specs[k].name] = k;
  int threads = o.fast_init_threads;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::uint64_t seed = o.seed;
  const float std = o.init_std;
  const std::int64_t active_vocab = o.active_vocab;
  const float head_scale = o.head_scale;
  return [index, threads, seed, std, active_vocab, head_scale](const checkpoint::TensorSpec& spec, std::uint8_t* dst) {
    FastTensor t;
    t.dst = dst;
    t.n = spec.nbytes() / checkpoint::DTypeSize(spec.dtype);
    t.zero_from = t.n;
    t.is_norm = spec.shape.size() == 1;
    t.index = index->at(spec.name);
    const bool is_head = spec.name == "model.transformer.ff_out.weight";
    if (is_head && active_vocab > 0 && active_vocab < spec.shape[0])
      t.zero_from = static_cast<std::size_t>(active_vocab * spec.shape[1]);
    const std::size_t chunks = (t.n + kFastInitChunk - 1) / kFastInitChunk;
    // The head's draws scaled: z * (std * s), which for a power of two s is exactly s times z * std.
    const float tensor_std = is_head ? std * head_scale : std;
    ForEachChunk(chunks, threads, [&](std::size_t c) { FillChunkOf(t, c, spec.dtype, seed, tensor_std); });
  };
}

}  // namespace unmask::tools
