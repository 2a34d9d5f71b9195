#include "common/registry/progressive_loader.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "common/quant/convert.h"
#include "common/quant/pruning.h"
#include "common/segment/weight_view.h"
#include "tests/fixtures/weight_checkpoints.h"

namespace unmask::weights {
namespace {

using checkpoint::Checkpoint;
using checkpoint::DType;
using checkpoint::LladaConfig;

struct Source {
  std::unique_ptr<Checkpoint> ckpt;
  LladaConfig config;
};

Source OpenTiny() {
  Source s;
  auto config = LladaConfig::FromFile(testing::TinyLladaDir() + "/config.json");
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  s.config = *config;
  auto ckpt = Checkpoint::Open(testing::TinyLladaDir());
  EXPECT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  s.ckpt = std::move(*ckpt);
  return s;
}

class ProgressiveLoaderTest : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_TRUE(testing::LeakedSegmentsOfThisProcess().empty()); }

  // Loads the tiny checkpoint with `spec`, attaches to it by name and unlinks the name (the
  // attachment keeps the memory).
  AttachedModel LoadAndAttach(const std::string& spec_text) {
    auto spec = PrecisionSpec::Parse(spec_text);
    EXPECT_TRUE(spec.ok());
    auto loaded = LoadIntoSegment(*src_.ckpt, src_.config, *spec, "tiny-llada");
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    auto attached = AttachedModel::Attach(loaded->segment.name());
    EXPECT_TRUE(attached.ok()) << attached.status().ToString();
    EXPECT_TRUE(loaded->segment.Unlink().ok());
    return std::move(*attached);
  }

  Source src_ = OpenTiny();
};

TEST_F(ProgressiveLoaderTest, Bf16IsByteIdenticalToTheSource) {
  AttachedModel model = LoadAndAttach("bf16");
  EXPECT_EQ(model.model_id(), "tiny-llada");
  EXPECT_EQ(model.manifest().precision, "bf16");
  EXPECT_EQ(model.manifest().config_json, testing::ReadFile(testing::TinyLladaDir() + "/config.json"));
  const auto expected = checkpoint::ExpectedTensors(src_.config);
  ASSERT_EQ(model.manifest().tensors.size(), expected.size());
  for (const auto& t : expected) {
    auto view = model.Find(t.name);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    auto ref = *src_.ckpt->Find(t.name);
    EXPECT_EQ(view->dtype(), DType::kBF16);
    EXPECT_EQ(view->shape(), t.shape);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(view->data) % 64, 0u) << t.name;
    ASSERT_EQ(view->entry->nbytes, ref.info->nbytes);
    EXPECT_EQ(std::memcmp(view->data, ref.data(), ref.info->nbytes), 0) << t.name;
  }
  EXPECT_EQ(model.Find("model.transformer.nope").status().code(), StatusCode::kNotFound);
}

TEST_F(ProgressiveLoaderTest, ADeviceRegionMustHoldTheWholeDataRegion) {
  AttachedModel model = LoadAndAttach("int8");
  const std::uint64_t need = model.manifest().totals.data_bytes;
  EXPECT_EQ(model.device_region(0), nullptr);
  // Any address will do for the bookkeeping; a GPU test maps a real one (shared_gpu_weights_test).
  const auto* base = reinterpret_cast<const std::uint8_t*>(std::uintptr_t{1} << 40);
  Status small = model.SetDeviceRegion(0, base, need - 1, "cuda-ipc:v1:0:1:00", nullptr);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(small.message().find(std::to_string(need)), std::string::npos) << small.ToString();
  EXPECT_EQ(model.device_region(0), nullptr);
  ASSERT_TRUE(model.SetDeviceRegion(1, base, need, "handle", nullptr).ok());
  EXPECT_EQ(model.device_region(1), base);
  EXPECT_EQ(model.device_region(0), nullptr);  // only on the device it was opened on
  EXPECT_EQ(model.device_handle(), "handle");
}

TEST_F(ProgressiveLoaderTest, Fp32AndFp16HoldTheConvertedSourceValues) {
  for (const char* spec : {"fp32", "fp16"}) {
    AttachedModel model = LoadAndAttach(spec);
    for (const auto& t : checkpoint::ExpectedTensors(src_.config)) {
      auto view = model.Find(t.name);
      ASSERT_TRUE(view.ok());
      auto ref = *src_.ckpt->Find(t.name);
      const std::int64_t n = ref.info->numel();
      const std::vector<float> source = testing::SourceAsF32(ref.data(), ref.info->dtype, n);
      std::vector<float> stored(static_cast<std::size_t>(n));
      ASSERT_TRUE(DequantizeRows(*view, 0, view->rows(), stored.data()).ok());
      for (std::int64_t i = 0; i < n; ++i) {
        const float want = std::string(spec) == "fp32" ? source[i] : F16ToF32(F32ToF16(source[i]));
        ASSERT_EQ(stored[i], want) << t.name << "[" << i << "]";
      }
    }
  }
}

// Checks every quantized tensor of `model` against the source within half a scale per row
// (int8) or per group (int4), and every other tensor for bf16 identity.
void ExpectWithinQuantizationBounds(const AttachedModel& model, const Source& src, int expected_quantized) {
  int quantized = 0;
  for (const auto& t : checkpoint::ExpectedTensors(src.config)) {
    auto view = model.Find(t.name);
    ASSERT_TRUE(view.ok());
    auto ref = *src.ckpt->Find(t.name);
    const std::int64_t rows = view->rows(), cols = view->cols();
    const std::vector<float> source = testing::SourceAsF32(ref.data(), ref.info->dtype, rows * cols);
    std::vector<float> back(static_cast<std::size_t>(rows * cols));
    ASSERT_TRUE(DequantizeRows(*view, 0, rows, back.data()).ok());
    const QuantInfo& q = view->quant();
    if (q.scheme == QuantScheme::kNone) {
      EXPECT_EQ(std::memcmp(view->data, ref.data(), ref.info->nbytes), 0) << t.name;
      continue;
    }
    ++quantized;
    const auto* scales = view->scales;
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        float scale;
        if (q.scheme == QuantScheme::kInt8PerChannel) {
          scale = reinterpret_cast<const float*>(scales)[r];
        } else {
          const std::int64_t groups = (cols + q.group_size - 1) / q.group_size;
          scale = F16ToF32(reinterpret_cast<const std::uint16_t*>(scales)[r * groups + c / q.group_size]);
        }
        const std::size_t i = static_cast<std::size_t>(r * cols + c);
        ASSERT_LE(std::fabs(back[i] - source[i]), scale / 2 * (1 + 1e-5f)) << t.name << " row " << r << " col " << c;
      }
    }
    // The bf16 row view agrees with the f32 one.
    std::vector<std::uint16_t> bf(static_cast<std::size_t>(cols));
    ASSERT_TRUE(DequantizeRowsBf16(*view, rows - 1, rows, bf.data()).ok());
    for (std::int64_t c = 0; c < cols; ++c) EXPECT_EQ(bf[c], F32ToBf16(back[(rows - 1) * cols + c]));
  }
  EXPECT_EQ(quantized, expected_quantized);
}

TEST_F(ProgressiveLoaderTest, Int8IsWithinHalfARowScale) {
  AttachedModel model = LoadAndAttach("int8");
  ExpectWithinQuantizationBounds(model, src_, 14);
  auto q = model.Find("model.transformer.blocks.1.up_proj.weight");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->quant().scheme, QuantScheme::kInt8PerChannel);
  EXPECT_EQ(q->quant().scales_dtype, DType::kF32);
  EXPECT_EQ(q->dtype(), DType::kI8);
}

TEST_F(ProgressiveLoaderTest, Int4IsWithinHalfAGroupScaleForEveryScheme) {
  for (const char* spec : {"int4:g32:sym", "int4:g64:asym", "int4:g128:asym", "int4:g128:sym:emb:head"}) {
    SCOPED_TRACE(spec);
    AttachedModel model = LoadAndAttach(spec);
    const bool all = std::string(spec).find("head") != std::string::npos;
    ExpectWithinQuantizationBounds(model, src_, all ? 16 : 14);
    EXPECT_LT(model.manifest().totals.data_bytes, src_.ckpt->total_bytes());
  }
}

TEST_F(ProgressiveLoaderTest, PruningZeroesExactlyTheSmallestWeightsOfEachLinear) {
  AttachedModel model = LoadAndAttach("bf16:prune=0.5");
  const std::string name = "model.transformer.blocks.0.ff_proj.weight";
  auto view = model.Find(name);
  ASSERT_TRUE(view.ok());
  auto ref = *src_.ckpt->Find(name);
  const std::int64_t n = ref.info->numel();
  std::vector<float> expected = testing::SourceAsF32(ref.data(), ref.info->dtype, n);
  ASSERT_TRUE(PruneByMagnitude(expected.data(), n, 0.5).ok());
  std::vector<std::uint16_t> expected_bf16(static_cast<std::size_t>(n));
  F32ToBf16(expected.data(), expected_bf16.data(), expected.size());
  EXPECT_EQ(std::memcmp(view->data, expected_bf16.data(), view->entry->nbytes), 0);
  EXPECT_EQ(view->entry->pruned, n / 2);
  // Norms and the embedding are never pruned.
  auto wte = model.Find("model.transformer.wte.weight");
  EXPECT_EQ(wte->entry->pruned, 0);
  EXPECT_EQ(std::memcmp(wte->data, src_.ckpt->Find("model.transformer.wte.weight")->data(), wte->entry->nbytes), 0);
}

TEST_F(ProgressiveLoaderTest, ProgressReportsEveryTensorInOrder) {
  std::vector<LoadProgress> calls;
  auto loaded =
      LoadIntoSegment(*src_.ckpt, src_.config, *PrecisionSpec::Parse("int8"), "tiny", [&](const LoadProgress& p) {
        calls.push_back(p);
        return true;
      });
  ASSERT_TRUE(loaded.ok());
  ASSERT_TRUE(loaded->segment.Unlink().ok());
  const auto expected = checkpoint::ExpectedTensors(src_.config);
  ASSERT_EQ(calls.size(), expected.size() + 4);  // validating, planning, one per tensor, publishing, done
  EXPECT_EQ(calls.front().phase, LoadPhase::kValidating);
  EXPECT_EQ(calls[1].phase, LoadPhase::kPlanning);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const LoadProgress& p = calls[i + 2];
    EXPECT_EQ(p.phase, LoadPhase::kStreaming);
    EXPECT_EQ(p.current_tensor, expected[i].name);
    EXPECT_EQ(p.tensors_done, static_cast<std::int64_t>(i));
    EXPECT_EQ(p.tensors_total, static_cast<std::int64_t>(expected.size()));
    if (i > 0) {
      EXPECT_GT(p.bytes_done, calls[i + 1].bytes_done);
    }
  }
  EXPECT_EQ(calls.back().phase, LoadPhase::kDone);
  EXPECT_EQ(calls.back().tensors_done, calls.back().tensors_total);
  EXPECT_EQ(calls.back().bytes_done, calls.back().bytes_total);
  EXPECT_EQ(calls.back().bytes_total, src_.ckpt->total_bytes());
}

TEST_F(ProgressiveLoaderTest, CancellingMidwayFailsAndRemovesTheSegment) {
  std::string segment = ShmSegment::MakeName("cancel");
  LoadOptions options;
  options.segment_name = segment;
  int streamed = 0;
  bool existed_while_loading = false;
  auto loaded = LoadIntoSegment(
      *src_.ckpt, src_.config, *PrecisionSpec::Parse("bf16"), "tiny",
      [&](const LoadProgress& p) {
        if (p.phase != LoadPhase::kStreaming) return true;
        if (++streamed == 2) {
          // Attachers are refused while the segment is being written.
          auto early = AttachedModel::Attach(segment);
          existed_while_loading = early.status().code() == StatusCode::kUnavailable;
        }
        return streamed < 3;
      },
      options);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kCancelled);
  EXPECT_NE(loaded.status().message().find("2/21 tensors"), std::string::npos) << loaded.status().message();
  EXPECT_TRUE(existed_while_loading);
  EXPECT_EQ(ShmSegment::OpenReadOnly(segment).status().code(), StatusCode::kNotFound);
}

TEST_F(ProgressiveLoaderTest, LoadModelDirReadsConfigAndCheckpoint) {
  auto loaded = LoadModelDir(testing::TinyLladaDir(), *PrecisionSpec::Parse("int4:g64:sym"), "tiny");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->manifest.source_dir, testing::TinyLladaDir());
  EXPECT_EQ(loaded->manifest.segment_bytes, loaded->segment.size());
  ASSERT_TRUE(loaded->segment.Unlink().ok());
  EXPECT_EQ(LoadModelDir("/nonexistent-dir", *PrecisionSpec::Parse("bf16"), "x").status().code(),
            StatusCode::kNotFound);
}

// VmHWM/VmRSS of this process, in bytes.
std::uint64_t StatusField(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stoull(line.substr(std::strlen(field))) * 1024;
  }
  return 0;
}

// In a child process (its own peak RSS): the load's RSS growth stays within the final segment
// plus 10% plus the configured chunk (scratch + source pages); reading the checkpoint into
// memory first would add the checkpoint's size on top.
TEST_F(ProgressiveLoaderTest, PeakRssStaysNearTheSegmentSize) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory and quarantine make RSS meaningless";
#endif
  testing::TempDir dir;
  const LladaConfig config = testing::SmallConfig(512, 2, 1024, 16384);
  ASSERT_TRUE(testing::WriteCheckpoint(dir.path(), config, testing::LladaSpecs(config), 2).ok());
  for (const char* spec : {"fp32", "int4:g64:asym:emb:head"}) {
    SCOPED_TRACE(spec);
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      std::uint64_t out[3] = {0, 0, 0};               // growth, segment, ok
      std::ofstream("/proc/self/clear_refs") << "5";  // resets VmHWM to the current RSS
      const std::uint64_t base = StatusField("VmRSS:");
      LoadOptions options;
      options.chunk_elems = 1 << 20;  // 4 MiB of f32 scratch, 2 MiB of bf16 source per chunk
      auto loaded = LoadModelDir(dir.path(), *PrecisionSpec::Parse(spec), "rss", {}, options);
      if (loaded.ok()) {
        out[0] = StatusField("VmHWM:") - base;
        out[1] = loaded->segment.size();
        out[2] = 1;
        (void)loaded->segment.Unlink();
      }
      (void)!::write(fds[1], out, sizeof(out));
      ::_exit(0);
    }
    ::close(fds[1]);
    std::uint64_t out[3] = {0, 0, 0};
    ASSERT_EQ(::read(fds[0], out, sizeof(out)), static_cast<ssize_t>(sizeof(out)));
    ::close(fds[0]);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_EQ(out[2], 1u) << "load failed in the child";
    const std::uint64_t budget = out[1] + out[1] / 10 + (12u << 20);
    EXPECT_LE(out[0], budget) << "peak RSS growth " << out[0] << " for a segment of " << out[1];
    EXPECT_GE(out[0], out[1] / 2) << "the measurement must see the segment itself";
  }
}

}  // namespace
}  // namespace unmask::weights
