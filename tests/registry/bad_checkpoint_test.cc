// Every way a checkpoint can be bad fails the load with an error naming the file and the
// tensor, and leaves no shm segment behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "common/registry/progressive_loader.h"
#include "tests/fixtures/weight_checkpoints.h"

namespace unmask::weights {
namespace {

using checkpoint::DType;
using checkpoint::LladaConfig;
using checkpoint::TensorSpec;

constexpr const char* kShard1 = "model-00001-of-00002.safetensors";
constexpr const char* kShard2 = "model-00002-of-00002.safetensors";

class BadCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = testing::SmallConfig();
    specs_ = testing::LladaSpecs(config_);
  }
  void TearDown() override { EXPECT_TRUE(testing::LeakedSegmentsOfThisProcess().empty()); }

  void Write() { ASSERT_TRUE(testing::WriteCheckpoint(dir_.path(), config_, specs_, 2).ok()); }

  // The load's status; a load that unexpectedly succeeds still cleans up its segment.
  Status Load(const std::string& spec = "bf16") {
    auto loaded = LoadModelDir(dir_.path(), *PrecisionSpec::Parse(spec), "bad");
    if (loaded.ok()) {
      (void)loaded->segment.Unlink();
      return OkStatus();
    }
    return loaded.status();
  }

  // Rewrites the JSON header of a shard through `edit`, keeping the header length so that
  // data offsets stay put (the JSON is padded with spaces).
  void EditHeader(const std::string& shard, const std::function<void(nlohmann::ordered_json&)>& edit) {
    const std::string path = dir_.Join(shard);
    std::string bytes = testing::ReadFile(path);
    std::uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<std::uint8_t>(bytes[i]);
    auto header = nlohmann::ordered_json::parse(bytes.substr(8, len));
    edit(header);
    std::string text = header.dump();
    ASSERT_LE(text.size(), len);
    text.resize(len, ' ');
    bytes.replace(8, len, text);
    testing::WriteFile(path, bytes);
  }

  static void ExpectNames(const Status& s, const std::vector<std::string>& parts) {
    ASSERT_FALSE(s.ok());
    for (const auto& part : parts)
      EXPECT_NE(s.message().find(part), std::string::npos) << "'" << part << "' not in: " << s.message();
  }

  testing::TempDir dir_;
  LladaConfig config_;
  std::vector<TensorSpec> specs_;
};

TEST_F(BadCheckpointTest, TheGoodCheckpointLoads) {
  Write();
  EXPECT_TRUE(Load().ok());
  auto loaded = LoadModelDir(dir_.path(), *PrecisionSpec::Parse("int4"), "good");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_TRUE(loaded->segment.Unlink().ok());
}

TEST_F(BadCheckpointTest, TruncatedShard) {
  Write();
  const std::string path = dir_.Join(kShard2);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(testing::ReadFile(path).size() - 100)), 0);
  Status s = Load();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  ExpectNames(s, {path, "model.transformer.ff_out.weight", "truncated"});
}

TEST_F(BadCheckpointTest, ShardFileMissing) {
  Write();
  ASSERT_EQ(::unlink(dir_.Join(kShard2).c_str()), 0);
  Status s = Load();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  ExpectNames(s, {"model.safetensors.index.json", kShard2, "model.transformer.blocks.1."});
}

TEST_F(BadCheckpointTest, ShardMissingFromIndex) {
  Write();
  const std::string index_path = dir_.Join("model.safetensors.index.json");
  auto index = nlohmann::ordered_json::parse(testing::ReadFile(index_path));
  auto& map = index["weight_map"];
  for (auto it = map.begin(); it != map.end();) {
    if (it.value() == kShard2)
      it = map.erase(it);
    else
      ++it;
  }
  testing::WriteFile(index_path, index.dump(2));
  Status s = Load();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  ExpectNames(s, {dir_.path(), "tensor 'model.transformer.blocks.1.", "missing"});
}

TEST_F(BadCheckpointTest, WrongShapeVersusConfig) {
  Write();
  LladaConfig other = config_;
  other.mlp_hidden_size = 96;
  testing::WriteFile(dir_.Join("config.json"), other.ToJsonText());
  Status s = Load();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  ExpectNames(s, {dir_.Join(kShard1), "model.transformer.blocks.0.ff_proj.weight", "[128, 64]", "[96, 64]"});
}

TEST_F(BadCheckpointTest, UnknownDtypeInHeader) {
  Write();
  EditHeader(kShard1,
             [](nlohmann::ordered_json& h) { h["model.transformer.blocks.0.k_proj.weight"]["dtype"] = "BX16"; });
  Status s = Load();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  ExpectNames(s, {dir_.Join(kShard1), "model.transformer.blocks.0.k_proj.weight", "unknown dtype 'BX16'"});
}

TEST_F(BadCheckpointTest, NonFloatDtype) {
  for (auto& spec : specs_) {
    if (spec.name == "model.transformer.blocks.0.v_proj.weight") spec.dtype = DType::kI16;
  }
  Write();
  Status s = Load();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  ExpectNames(s, {dir_.Join(kShard1), "model.transformer.blocks.0.v_proj.weight", "I16"});
}

TEST_F(BadCheckpointTest, MissingTensor) {
  specs_.erase(std::remove_if(specs_.begin(), specs_.end(),
                              [](const TensorSpec& t) { return t.name == "model.transformer.blocks.1.v_proj.weight"; }),
               specs_.end());
  Write();
  Status s = Load();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  ExpectNames(s, {dir_.path(), "model.transformer.blocks.1.v_proj.weight"});
}

TEST_F(BadCheckpointTest, OverlappingOffsets) {
  Write();
  // k_proj takes q_proj's bytes (same size): the two overlap and k_proj's own bytes are a hole.
  EditHeader(kShard1, [](nlohmann::ordered_json& h) {
    h["model.transformer.blocks.0.k_proj.weight"]["data_offsets"] =
        h["model.transformer.blocks.0.q_proj.weight"]["data_offsets"];
  });
  Status s = Load();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  ExpectNames(s, {dir_.Join(kShard1), "overlaps"});
  EXPECT_TRUE(s.message().find("blocks.0.k_proj.weight") != std::string::npos ||
              s.message().find("blocks.0.q_proj.weight") != std::string::npos)
      << s.message();
}

TEST_F(BadCheckpointTest, FailureWhileStreamingRemovesTheSegment) {
  Write();
  // A NaN in a linear weight passes validation and fails only when int8 quantizes it, after
  // the segment exists: the loader must unlink it.
  const std::string path = dir_.Join(kShard2);
  std::string bytes = testing::ReadFile(path);
  std::uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<std::uint8_t>(bytes[i]);
  auto header = nlohmann::json::parse(bytes.substr(8, len));
  const std::uint64_t begin = header["model.transformer.blocks.1.up_proj.weight"]["data_offsets"][0];
  const std::size_t at = 8 + len + begin + 2 * 70;  // element 70: row 1, column 6
  bytes[at] = static_cast<char>(0xc0);              // bf16 0x7fc0, a quiet NaN, little-endian
  bytes[at + 1] = 0x7f;
  testing::WriteFile(path, bytes);
  Status s = Load("int8");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  ExpectNames(s, {path, "model.transformer.blocks.1.up_proj.weight", "row 1, column 6", "not finite"});
  // The same checkpoint loads in bf16 (NaN is copied, not quantized).
  auto loaded = LoadModelDir(dir_.path(), *PrecisionSpec::Parse("bf16"), "nan");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_TRUE(loaded->segment.Unlink().ok());
}

TEST_F(BadCheckpointTest, BadConfigJson) {
  Write();
  testing::WriteFile(dir_.Join("config.json"), "{\"d_model\": 64");
  Status s = Load();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  ExpectNames(s, {dir_.Join("config.json"), "not well-formed JSON"});
}

}  // namespace
}  // namespace unmask::weights
