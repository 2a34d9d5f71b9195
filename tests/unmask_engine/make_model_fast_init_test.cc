// make-model's fast_init: parallel, counter-based random checkpoints (tools/make_model/fast_init.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/checkpoint/checkpoint.h"
#include "tests/fixtures/run_command.h"
#include "tests/fixtures/temp_checkpoint.h"
#include "tests/fixtures/tiny_config.h"
#include "tools/make_model/fast_init.h"
#include "tools/make_model/half_bits.h"
#include "tools/make_model/make_model.h"

namespace unmask {
namespace {

using checkpoint::DType;

// d_model 64 x vocab 40000: the embedding and the LM head span 3 chunks of kFastInitChunk values.
tools::MakeModelOptions FastOptions(std::uint64_t seed) {
  tools::MakeModelOptions o;
  o.config = testing::SmallConfig({64, 1, 128, 40000, 4, 2, 512});
  o.shards = 2;
  o.seed = seed;
  o.init_std = 0.05f;
  o.fast_init = true;
  return o;
}

std::string MakeAt(const testing::TempDir& dir, const std::string& name, const tools::MakeModelOptions& o) {
  const std::string path = dir.File(name);
  const Status s = tools::MakeModel(path, o);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return path;
}

// Every file of the directory, by name.
std::map<std::string, std::string> Files(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    files[e.path().filename().string()] = testing::ReadFile(e.path().string());
  return files;
}

// The tensor's values as floats (BF16 or F32 tensors).
std::vector<float> Values(const checkpoint::Checkpoint& ckpt, const std::string& name) {
  auto ref = ckpt.Find(name);
  EXPECT_TRUE(ref.ok()) << ref.status().ToString();
  if (!ref.ok()) return {};
  const std::int64_t n = ref->info->numel();
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    if (ref->info->dtype == DType::kF32) {
      std::memcpy(&out[i], ref->data() + 4 * i, 4);
    } else {
      std::uint16_t h;
      std::memcpy(&h, ref->data() + 2 * i, 2);
      const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
      std::memcpy(&out[i], &bits, 4);
    }
  }
  return out;
}

std::unique_ptr<checkpoint::Checkpoint> Open(const std::string& dir) {
  auto ckpt = checkpoint::Checkpoint::Open(dir);
  EXPECT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  return ckpt.ok() ? std::move(*ckpt) : nullptr;
}

TEST(MakeModelFastInitTest, SameSeedGivesIdenticalFilesWhateverTheThreadCount) {
  testing::TempDir dir;
  auto o = FastOptions(11);
  ASSERT_GT(o.config.vocab_size * o.config.d_model, static_cast<std::int64_t>(2 * tools::kFastInitChunk));
  o.fast_init_threads = 1;
  const auto one = Files(MakeAt(dir, "one", o));
  o.fast_init_threads = 3;
  const auto three = Files(MakeAt(dir, "three", o));
  o.fast_init_threads = 0;  // all hardware threads
  const auto all = Files(MakeAt(dir, "all", o));
  ASSERT_EQ(one.size(), 4u);  // config, 2 shards, index
  EXPECT_TRUE(one == three) << "1 and 3 threads wrote different bytes";
  EXPECT_TRUE(one == all) << "1 and all threads wrote different bytes";
  // And the fast path is really taken: the default generator gives other weights.
  o.fast_init = false;
  const auto slow = Files(MakeAt(dir, "slow", o));
  EXPECT_NE(one.at("model-00001-of-00002.safetensors"), slow.at("model-00001-of-00002.safetensors"));
}

TEST(MakeModelFastInitTest, DifferentSeedGivesDifferentBytesInEveryTensor) {
  testing::TempDir dir;
  auto a = Open(MakeAt(dir, "a", FastOptions(1)));
  auto b = Open(MakeAt(dir, "b", FastOptions(2)));
  ASSERT_TRUE(a && b);
  for (const auto& name : a->tensor_names()) {
    auto ta = *a->Find(name);
    auto tb = *b->Find(name);
    if (ta.info->shape.size() == 1) continue;  // norm weights are 1 whatever the seed
    EXPECT_NE(std::memcmp(ta.data(), tb.data(), ta.info->nbytes), 0) << name;
  }
}

TEST(MakeModelFastInitTest, WeightsAreNormalWithTheInitStd) {
  testing::TempDir dir;
  const auto o = FastOptions(5);
  auto ckpt = Open(MakeAt(dir, "m", o));
  ASSERT_TRUE(ckpt);
  for (const std::string name : {"model.transformer.wte.weight", "model.transformer.ff_out.weight"}) {
    const auto v = Values(*ckpt, name);
    ASSERT_GT(v.size(), 2 * tools::kFastInitChunk);
    double sum = 0, sq = 0;
    for (float x : v) sum += x, sq += static_cast<double>(x) * x;
    const double mean = sum / v.size();
    const double std = std::sqrt(sq / v.size() - mean * mean);
    EXPECT_LT(std::fabs(mean), 0.01 * o.init_std) << name;
    EXPECT_NEAR(std, o.init_std, 0.05 * o.init_std) << name;
    // Normal, not merely the right moments: 4.55% of a normal lies beyond 2 std, 0.27% beyond 3.
    std::size_t beyond2 = 0, beyond3 = 0;
    for (float x : v) beyond2 += std::fabs(x) > 2 * std, beyond3 += std::fabs(x) > 3 * std;
    EXPECT_NEAR(static_cast<double>(beyond2) / v.size(), 0.0455, 0.002) << name;
    EXPECT_NEAR(static_cast<double>(beyond3) / v.size(), 0.0027, 0.0005) << name;
  }
}

TEST(MakeModelFastInitTest, NormWeightsAreOneAndInactiveHeadRowsAreZero) {
  testing::TempDir dir;
  auto o = FastOptions(3);
  o.active_vocab = 1000;
  auto ckpt = Open(MakeAt(dir, "m", o));
  ASSERT_TRUE(ckpt);
  int norms = 0;
  for (const auto& name : ckpt->tensor_names()) {
    if (ckpt->Find(name)->info->shape.size() != 1) continue;
    ++norms;
    for (float x : Values(*ckpt, name)) ASSERT_EQ(x, 1.0f) << name;
  }
  EXPECT_EQ(norms, 3);  // attn_norm, ff_norm, ln_f
  const auto head = Values(*ckpt, "model.transformer.ff_out.weight");
  const std::size_t cut = static_cast<std::size_t>(o.active_vocab * o.config.d_model);
  ASSERT_EQ(head.size(), static_cast<std::size_t>(o.config.vocab_size * o.config.d_model));
  std::size_t nonzero_active = 0, nonzero_inactive = 0;
  for (std::size_t i = 0; i < head.size(); ++i) (i < cut ? nonzero_active : nonzero_inactive) += head[i] != 0.0f;
  EXPECT_EQ(nonzero_inactive, 0u);
  EXPECT_GT(nonzero_active, cut * 9 / 10);
  // The embedding is not cut.
  const auto wte = Values(*ckpt, "model.transformer.wte.weight");
  EXPECT_NE(wte.back(), 0.0f);
}

TEST(MakeModelFastInitTest, EveryDTypeStoresTheSameDraws) {
  testing::TempDir dir;
  auto o = FastOptions(9);
  o.dtype = DType::kF32;
  auto f32 = Open(MakeAt(dir, "f32", o));
  o.dtype = DType::kBF16;
  auto bf16 = Open(MakeAt(dir, "bf16", o));
  o.dtype = DType::kF16;
  auto f16 = Open(MakeAt(dir, "f16", o));
  ASSERT_TRUE(f32 && bf16 && f16);
  const std::string name = "model.transformer.blocks.0.ff_proj.weight";
  const auto exact = Values(*f32, name);
  const std::uint8_t* b = bf16->Find(name)->data();
  const std::uint8_t* h = f16->Find(name)->data();
  ASSERT_FALSE(exact.empty());
  for (std::size_t i = 0; i < exact.size(); ++i) {
    std::uint16_t bb, hh;
    std::memcpy(&bb, b + 2 * i, 2);
    std::memcpy(&hh, h + 2 * i, 2);
    ASSERT_EQ(bb, tools::FloatToHalfBits(exact[i], DType::kBF16)) << i;
    ASSERT_EQ(hh, tools::FloatToHalfBits(exact[i], DType::kF16)) << i;
  }
}

std::pair<int, std::string> RunCommand(const std::string& command) {
  testing::CommandResult r = testing::RunCommand(command);
  return {r.exit_code, r.out};
}

TEST(MakeModelFastInitTest, CliFastInitCheckpointLoadsAndGeneratesInTheEngine) {
  testing::TempDir dir;
  const std::string model = dir.File("m");
  const std::string make = std::string(MAKE_MODEL_BIN) + " --out " + model +
                           " --d-model 32 --n-layers 2 --n-heads 4 --n-kv-heads 2 --mlp-hidden-size 48"
                           " --vocab-size 126464 --shards 3 --active-vocab 1000 --seed 4 --fast-init";
  auto [made_rc, made_out] = RunCommand(make);
  ASSERT_EQ(made_rc, 0) << made_out;
  const std::string first = testing::ReadFile(model + "/model-00001-of-00003.safetensors");
  ASSERT_EQ(RunCommand(make).first, 0);  // a second run writes the same bytes
  EXPECT_TRUE(first == testing::ReadFile(model + "/model-00001-of-00003.safetensors"));
  auto [gen_rc, gen_out] = RunCommand(std::string(UNMASK_ENGINE_BIN) + " generate --model " + model +
                                      " --prompt-ids 5,6,7 --steps 8 --gen-length 8 --block-length 4 --precision bf16 --json");
  ASSERT_EQ(gen_rc, 0) << gen_out;
  const auto ids = nlohmann::json::parse(gen_out)["output"][0];
  ASSERT_EQ(ids.size(), 8u);
  for (const auto& id : ids) EXPECT_LT(id.get<std::int64_t>(), 1000) << "a zeroed LM head row won";
}

// head_scale multiplies the LM head alone: with a power of two the values are exactly that many
// times the unscaled ones (both generators), every other tensor's bytes unchanged.
TEST(MakeModelHeadScaleTest, ScalesTheHeadAloneByExactlyTheFactor) {
  for (const bool fast : {true, false}) {
    testing::TempDir dir;
    auto o = FastOptions(9);
    o.fast_init = fast;
    o.config = testing::SmallConfig({64, 1, 128, 3000, 4, 2, 512});
    auto plain = Open(MakeAt(dir, "plain", o));
    o.head_scale = 4.0f;
    auto scaled = Open(MakeAt(dir, "scaled", o));
    ASSERT_TRUE(plain && scaled);
    for (const auto& name : plain->tensor_names()) {
      if (name == "model.transformer.ff_out.weight") continue;
      auto a = *plain->Find(name);
      auto b = *scaled->Find(name);
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.info->nbytes), 0) << name << (fast ? " (fast)" : "");
    }
    const auto a = Values(*plain, "model.transformer.ff_out.weight");
    const auto b = Values(*scaled, "model.transformer.ff_out.weight");
    ASSERT_EQ(a.size(), b.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < a.size(); ++i) differ += b[i] != 4.0f * a[i];
    EXPECT_EQ(differ, 0u) << (fast ? "fast" : "default") << " generator";
    EXPECT_NE(a[0], 0.0f);
  }
}

// A scale that is not a finite positive number, or one on a tied model, is refused by name.
TEST(MakeModelHeadScaleTest, BadScalesAreRefusedNamingTheOption) {
  testing::TempDir dir;
  for (const float bad : {0.0f, -2.0f, std::nanf(""), INFINITY}) {
    auto o = FastOptions(1);
    o.head_scale = bad;
    const Status s = tools::MakeModel(dir.File("bad"), o);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), ::testing::HasSubstr("head_scale")) << bad;
  }
  auto tied = FastOptions(1);
  tied.config.weight_tying = true;
  tied.head_scale = 2.0f;
  const Status s = tools::MakeModel(dir.File("tied"), tied);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("embedding table"));
  auto [rc, out] = RunCommand(std::string(MAKE_MODEL_BIN) + " --out " + dir.File("cli") + " --head-scale -1 2>&1");
  EXPECT_NE(rc, 0);
  EXPECT_THAT(out, ::testing::HasSubstr("head_scale must be a finite number > 0"));
}

}  // namespace
}  // namespace unmask
