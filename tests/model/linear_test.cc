// The two ways a quantized linear layer dequantizes its packed weight: the CPU rows loop and the
// tensors path (ATen element-wise operations, what a GPU runs; here on CPU tensors). They must
// give the same bits, for every scheme and for shapes whose last group or byte is partial.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "common/model/dequant_element.h"
#include "common/model/fused_ops.h"
#include "common/model/linear.h"
#include "common/quant/convert.h"
#include "common/quant/int4_groupwise.h"
#include "common/quant/int8_per_channel.h"
#include "common/quant/quant_policy.h"
#include "common/segment/manifest.h"
#include "common/segment/tensor_view.h"

namespace unmask::model {
namespace {

using weights::QuantScheme;

// A quantized weight laid out as in a segment's data region: data, then scales, then zeros.
struct PackedLayer {
  weights::TensorEntry entry;
  std::vector<std::uint8_t> region;
  std::vector<float> original;

  weights::TensorView view() const { return weights::MakeTensorView(entry, region.data()); }
};

std::vector<float> RandomWeights(std::int64_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> w(static_cast<std::size_t>(n));
  for (auto& v : w) v = dist(gen);
  return w;
}

void Place(PackedLayer& layer, std::uint64_t offset, const void* bytes, std::uint64_t n) {
  if (layer.region.size() < offset + n) layer.region.resize(offset + n);
  std::memcpy(layer.region.data() + offset, bytes, n);
}

PackedLayer Int8Layer(std::int64_t rows, std::int64_t cols) {
  PackedLayer l;
  l.original = RandomWeights(rows * cols, 7);
  auto q = weights::QuantizeInt8PerChannel(l.original.data(), rows, cols);
  EXPECT_TRUE(q.ok()) << q.status().ToString();
  l.entry.name = "int8";
  l.entry.dtype = checkpoint::DType::kI8;
  l.entry.shape = {rows, cols};
  l.entry.nbytes = q->q.size();
  l.entry.quant.scheme = QuantScheme::kInt8PerChannel;
  l.entry.quant.scales_offset = weights::AlignUp(l.entry.nbytes, weights::kTensorAlignment);
  l.entry.quant.scales_nbytes = q->scales.size() * sizeof(float);
  Place(l, 0, q->q.data(), l.entry.nbytes);
  Place(l, l.entry.quant.scales_offset, q->scales.data(), l.entry.quant.scales_nbytes);
  return l;
}

PackedLayer Int4Layer(std::int64_t rows, std::int64_t cols, int group, bool symmetric) {
  PackedLayer l;
  l.original = RandomWeights(rows * cols, 11);
  auto q = weights::QuantizeInt4Groupwise(l.original.data(), rows, cols, group, symmetric);
  EXPECT_TRUE(q.ok()) << q.status().ToString();
  l.entry.name = "int4";
  l.entry.dtype = checkpoint::DType::kU8;
  l.entry.shape = {rows, cols};
  l.entry.nbytes = q->packed.size();
  auto& info = l.entry.quant;
  info.scheme = QuantScheme::kInt4Groupwise;
  info.group_size = group;
  info.symmetric = symmetric;
  info.scales_dtype = checkpoint::DType::kF16;
  info.scales_offset = weights::AlignUp(l.entry.nbytes, weights::kTensorAlignment);
  info.scales_nbytes = q->scales.size() * 2;
  Place(l, 0, q->packed.data(), l.entry.nbytes);
  Place(l, info.scales_offset, q->scales.data(), info.scales_nbytes);
  if (!symmetric) {
    info.zeros_offset = weights::AlignUp(info.scales_offset + info.scales_nbytes, weights::kTensorAlignment);
    info.zeros_nbytes = q->zeros.size();
    Place(l, info.zeros_offset, q->zeros.data(), info.zeros_nbytes);
  }
  return l;
}

struct Case {
  const char* name;
  PackedLayer layer;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  cases.push_back({"int8 48x96", Int8Layer(48, 96)});
  cases.push_back({"int8 odd 5x33", Int8Layer(5, 33)});
  cases.push_back({"int4 sym g32 48x128", Int4Layer(48, 128, 32, true)});
  cases.push_back({"int4 asym g64 40x128", Int4Layer(40, 128, 64, false)});
  cases.push_back({"int4 asym g32, partial last group 24x100", Int4Layer(24, 100, 32, false)});
  cases.push_back({"int4 sym g128, odd cols 16x99", Int4Layer(16, 99, 128, true)});
  return cases;
}

TEST(QuantizedLinearTest, TensorsPathGivesTheBitsOfTheRowsPath) {
  for (auto& c : Cases()) {
    for (at::ScalarType compute : {at::kFloat, at::kBFloat16}) {
      SCOPED_TRACE(std::string(c.name) + (compute == at::kFloat ? " f32" : " bf16"));
      const Linear rows = Linear::Quantized(c.layer.view(), compute);
      const Linear tensors = Linear::QuantizedTensors(c.layer.view(), compute, at::Device(at::kCPU));
      ASSERT_TRUE(rows.quantized());
      ASSERT_TRUE(tensors.quantized());
      const at::Tensor a = rows.weight(), b = tensors.weight();
      ASSERT_EQ(a.sizes(), b.sizes());
      ASSERT_EQ(a.scalar_type(), b.scalar_type());
      EXPECT_TRUE(at::equal(a, b)) << "max |diff| " << (a.to(at::kFloat) - b.to(at::kFloat)).abs().max().item<float>();
      const at::Tensor x = at::randn({3, 2, a.size(1)}, at::TensorOptions().dtype(compute));
      EXPECT_TRUE(at::equal(rows.Apply(x), tensors.Apply(x)));
    }
  }
}

TEST(QuantizedLinearTest, TensorsPathStaysWithinTheQuantizationErrorOfTheOriginal) {
  for (auto& c : Cases()) {
    SCOPED_TRACE(c.name);
    const auto& shape = c.layer.entry.shape;
    const at::Tensor original =
        at::from_blob(c.layer.original.data(), {shape[0], shape[1]}, at::kFloat).clone();
    const at::Tensor w = Linear::QuantizedTensors(c.layer.view(), at::kFloat, at::Device(at::kCPU)).weight();
    const float max_abs = original.abs().max().item<float>();
    // Half a quantization step of the coarsest scheme (int4: 15 levels per group) bounds the error.
    EXPECT_LE((w - original).abs().max().item<float>(), max_abs / 7.0f / 2.0f * 1.01f);
    EXPECT_GT((w - original).abs().max().item<float>(), 0.0f);  // it was quantized, not copied
  }
}

// A layer above the scratch cap (weights::kMaxDequantScratchElements; an 8B model's quantized LM
// head) is dequantized and multiplied a chunk of rows at a time: here 16380 rows, then 5. Every
// output column is the whole dequantized weight's, and both paths agree bit for bit.
TEST(QuantizedLinearTest, ALayerAboveTheScratchCapIsAppliedInChunks) {
  const std::int64_t cols = 4097, chunk = weights::kMaxDequantScratchElements / cols, rows = chunk + 5;
  ASSERT_EQ(weights::DequantChunkRows(rows, cols), chunk);
  const PackedLayer layer = Int8Layer(rows, cols);
  const Linear by_rows = Linear::Quantized(layer.view(), at::kFloat);
  const Linear by_tensors = Linear::QuantizedTensors(layer.view(), at::kFloat, at::Device(at::kCPU));
  at::manual_seed(5);
  const at::Tensor x = at::randn({2, cols});
  const at::Tensor y = by_rows.Apply(x);
  ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{2, rows}));
  EXPECT_TRUE(at::equal(y, by_tensors.Apply(x)));
  const at::Tensor expect = at::matmul(x, by_rows.weight().t());
  // The few-row kernel and the BLAS sum in different orders; a chunk in the wrong columns or
  // rows would be off by the values themselves (about 0.05 * sqrt(4097) ~ 3).
  EXPECT_TRUE(at::allclose(y, expect, 1e-4, 1e-4)) << "max |diff| " << (y - expect).abs().max().item<float>();
  EXPECT_TRUE(at::allclose(y.narrow(1, chunk, 5), expect.narrow(1, chunk, 5), 1e-4, 1e-4)) << "the last chunk";
}

// Rows(ids), an embedding lookup: the dequantized weight's rows, on both paths and in both
// dtypes, for ids of any shape (repeats and the last row included); a dense layer's is
// at::embedding's. An id outside the table is refused, by name on the rows path.
TEST(QuantizedLinearTest, RowsAreTheDequantizedWeightsRows) {
  for (auto& c : Cases()) {
    const std::int64_t rows = c.layer.entry.shape[0];
    const at::Tensor ids = at::tensor(std::vector<std::int64_t>{rows - 1, 0, 3, 3, 1, rows - 1}).view({2, 3});
    for (at::ScalarType compute : {at::kFloat, at::kBFloat16}) {
      SCOPED_TRACE(std::string(c.name) + (compute == at::kFloat ? " f32" : " bf16"));
      const Linear by_rows = Linear::Quantized(c.layer.view(), compute);
      const Linear by_tensors = Linear::QuantizedTensors(c.layer.view(), compute, at::Device(at::kCPU));
      const at::Tensor expect = by_rows.weight().index_select(0, ids.view({-1})).view({2, 3, -1});
      EXPECT_TRUE(at::equal(by_rows.Rows(ids), expect));
      EXPECT_TRUE(at::equal(by_tensors.Rows(ids), expect));
      const at::Tensor bad = at::tensor(std::vector<std::int64_t>{0, rows});
      try {
        (void)by_rows.Rows(bad);
        ADD_FAILURE() << "an id past the table was looked up";
      } catch (const std::exception& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("token id " + std::to_string(rows) + " is outside the " +
                                                  std::to_string(rows) + " rows of tensor '" + c.layer.entry.name + "'"));
      }
      EXPECT_ANY_THROW((void)by_tensors.Rows(bad));
      EXPECT_ANY_THROW((void)by_rows.Rows(at::tensor(std::vector<std::int64_t>{-1})));
    }
  }
  const at::Tensor table = at::randn({7, 5});
  const at::Tensor ids = at::tensor(std::vector<std::int64_t>{6, 0, 2});
  EXPECT_TRUE(at::equal(Linear(table).Rows(ids), at::embedding(table, ids)));
}

TEST(QuantizedLinearTest, ScratchIsReusedAcrossLayersOfOneThread) {
  // Two layers applied one after the other on one thread: the second must not see the first's
  // weights (the scratch is overwritten completely, also when the second layer is smaller).
  auto big = Int8Layer(48, 96);
  auto small = Int4Layer(16, 99, 128, true);
  const Linear a = Linear::QuantizedTensors(big.view(), at::kFloat, at::Device(at::kCPU));
  const Linear b = Linear::QuantizedTensors(small.view(), at::kFloat, at::Device(at::kCPU));
  at::manual_seed(12);
  const at::Tensor xa = at::randn({1, 96}), xb = at::randn({1, 99});
  const at::Tensor expect_b = at::linear(xb, b.weight());
  // Apply may use the few-row kernel, whose sums differ from the BLAS's in the last bits; stale
  // weights would differ by far more.
  (void)a.Apply(xa);
  EXPECT_TRUE(at::allclose(b.Apply(xb), expect_b, 1e-5, 1e-5));
  (void)a.Apply(xa);
  EXPECT_TRUE(at::allclose(b.Apply(xb), expect_b, 1e-5, 1e-5));
}

// The element functions the fused CUDA kernels run (dequant_element.h), run here on the host over
// every element in the kernels' order (a row at a time; int4 a packed byte at a time): the ATen
// tensors path's bits, for both output types. This is the kernels' arithmetic and indexing; only
// the launch is left to the GPU test below.
template <typename Out>
std::vector<Out> ByElementFunctions(const PackedLayer& layer) {
  const auto& e = layer.entry;
  const std::int64_t rows = e.shape[0], cols = e.shape[1];
  std::vector<Out> out(static_cast<std::size_t>(rows * cols));
  const std::uint8_t* base = layer.region.data();
  if (e.quant.scheme == QuantScheme::kInt8PerChannel) {
    const dequant::Int8Layout l{reinterpret_cast<const std::int8_t*>(base),
                                reinterpret_cast<const float*>(base + e.quant.scales_offset), cols};
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) dequant::Int8Element(l, r, c, out.data() + r * cols);
  } else {
    const std::int64_t group = e.quant.group_size, groups = (cols + group - 1) / group, pb = (cols + 1) / 2;
    const dequant::Int4Layout l{base, reinterpret_cast<const std::uint16_t*>(base + e.quant.scales_offset),
                                e.quant.symmetric ? nullptr : base + e.quant.zeros_offset, cols, pb, group, groups};
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t p = 0; p < pb; ++p) dequant::Int4Byte(l, r, p, out.data() + r * cols);
  }
  return out;
}

TEST(FusedDequantizationTest, ElementFunctionsGiveTheTensorsPathsBits) {
  for (auto& c : Cases()) {
    SCOPED_TRACE(c.name);
    const at::Tensor f32 = Linear::QuantizedTensors(c.layer.view(), at::kFloat, at::Device(at::kCPU)).weight();
    const at::Tensor bf16 = Linear::QuantizedTensors(c.layer.view(), at::kBFloat16, at::Device(at::kCPU)).weight();
    const auto a = ByElementFunctions<float>(c.layer);
    const auto b = ByElementFunctions<std::uint16_t>(c.layer);
    ASSERT_EQ(static_cast<std::int64_t>(a.size()), f32.numel());
    EXPECT_EQ(std::memcmp(a.data(), f32.data_ptr(), a.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(b.data(), bf16.data_ptr(), b.size() * sizeof(std::uint16_t)), 0);
  }
}

// The conversions the element functions carry (device code cannot call convert.h): every f16
// bit pattern, subnormals and Inf/NaN included, and float32 values around bf16's rounding ties.
TEST(FusedDequantizationTest, ConversionsMatchTheHostOnes) {
  for (std::uint32_t h = 0; h <= 0xFFFFu; ++h) {
    const float a = dequant::HalfToFloat(static_cast<std::uint16_t>(h)), b = weights::F16ToF32(static_cast<std::uint16_t>(h));
    ASSERT_EQ(weights::FloatBits(a), weights::FloatBits(b)) << "f16 bits " << h;
  }
  std::mt19937 gen(3);
  for (int i = 0; i < 200000; ++i) {
    // Low 16 bits near the tie (0x8000) half of the time, any bits otherwise.
    std::uint32_t u = gen();
    if (i % 2 == 0) u = (u & 0xFFFF0000u) | (0x7FFEu + (u & 3u));
    const float f = weights::BitsToFloat(u);
    const std::uint16_t want = f != f ? std::uint16_t{0x7FC0} : c10::BFloat16(f).x;
    ASSERT_EQ(dequant::RoundToBf16(f), want) << "float bits " << u;
  }
}

// The fused kernels on a GPU against ATen's operators there: the same bits for every case, and
// looked-up rows (a quantized embedding table) equal to the CPU rows path's.
TEST(FusedDequantizationTest, KernelsGiveTheAtenOperatorsBitsOnAGpu) {
  if (!fused::Available() || !at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a build with the CUDA kernels";
  const at::Device gpu(at::kCUDA, 0);
  for (auto& c : Cases()) {
    for (at::ScalarType compute : {at::kFloat, at::kBFloat16}) {
      SCOPED_TRACE(std::string(c.name) + (compute == at::kFloat ? " f32" : " bf16"));
      const Linear plain = Linear::QuantizedTensors(c.layer.view(), compute, gpu);
      const Linear fused = Linear::QuantizedTensors(c.layer.view(), compute, gpu, nullptr, /*fused_kernels=*/true);
      EXPECT_TRUE(at::equal(plain.weight(), fused.weight()));
      const at::Tensor x = at::randn({3, 2, c.layer.entry.shape[1]}, at::TensorOptions().dtype(compute).device(gpu));
      EXPECT_TRUE(at::equal(plain.Apply(x), fused.Apply(x)));
      const at::Tensor ids = at::tensor(std::vector<std::int64_t>{c.layer.entry.shape[0] - 1, 0, 2}).to(gpu);
      const at::Tensor rows = Linear::Quantized(c.layer.view(), compute).Rows(ids.cpu());
      EXPECT_TRUE(at::equal(plain.Rows(ids).cpu(), rows)) << "an embedding lookup on the GPU";
      EXPECT_TRUE(at::equal(fused.Rows(ids).cpu(), rows));
    }
  }
}

}  // namespace
}  // namespace unmask::model
