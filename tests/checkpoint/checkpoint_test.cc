// safetensors and sharded-checkpoint reading, including every kind of bad file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "common/checkpoint/checkpoint.h"
#include "common/checkpoint/checkpoint_writer.h"
#include "tests/fixtures/temp_checkpoint.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::checkpoint {
namespace {

using ::testing::HasSubstr;
using unmask::testing::ReadFile;
using unmask::testing::ReadHeader;
using unmask::testing::RewriteHeader;
using unmask::testing::TempDir;
using unmask::testing::WriteFile;

// Two F32 tensors "a" [2, 3] (values 0..5) and "b" [4] (values 10..13).
std::string WriteTwoTensors(const TempDir& dir) {
  const std::string path = dir.File("model.safetensors");
  std::vector<TensorSpec> specs = {{"a", DType::kF32, {2, 3}}, {"b", DType::kF32, {4}}};
  auto s = WriteSafetensors(path, specs, [](const TensorSpec& spec, std::uint8_t* dst) {
    float base = spec.name == "a" ? 0.f : 10.f;
    for (std::uint64_t i = 0; i < spec.nbytes() / 4; ++i) {
      float v = base + static_cast<float>(i);
      std::memcpy(dst + 4 * i, &v, 4);
    }
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return path;
}

TEST(SafetensorsTest, ReadsWhatTheWriterWrote) {
  TempDir dir;
  auto file = SafetensorsFile::Open(WriteTwoTensors(dir));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ((*file)->tensors().size(), 2u);
  const TensorInfo* b = (*file)->Find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->shape, (std::vector<std::int64_t>{4}));
  EXPECT_EQ(b->dtype, DType::kF32);
  float v;
  std::memcpy(&v, (*file)->Data(*b) + 8, 4);
  EXPECT_EQ(v, 12.f);
  EXPECT_EQ((*file)->metadata().at("format"), "pt");
  EXPECT_EQ((*file)->Find("missing"), nullptr);
}

TEST(SafetensorsTest, ParsesEveryDtypeTheLoaderNeeds) {
  for (const char* name : {"BF16", "F16", "F32", "F64", "I8", "U8", "I16", "I32", "I64", "BOOL"}) {
    auto d = ParseDType(name);
    ASSERT_TRUE(d.has_value()) << name;
    EXPECT_STREQ(DTypeName(*d), name);
  }
  EXPECT_FALSE(ParseDType("F8_E4M3").has_value());
}

Status OpenWithHeader(const TempDir& dir, const std::string& header) {
  const std::string path = WriteTwoTensors(dir);
  RewriteHeader(path, header);
  return SafetensorsFile::Open(path).status();
}

TEST(SafetensorsTest, RefusesUnknownDtypeNamingTensor) {
  TempDir dir;
  Status s = OpenWithHeader(dir, R"({"a":{"dtype":"Q7","shape":[2,3],"data_offsets":[0,24]},"b":{"dtype":"F32","shape":[4],"data_offsets":[24,40]}})");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("model.safetensors"));
  EXPECT_THAT(s.message(), HasSubstr("tensor 'a'"));
  EXPECT_THAT(s.message(), HasSubstr("unknown dtype 'Q7'"));
}

TEST(SafetensorsTest, RefusesLengthThatDisagreesWithShape) {
  TempDir dir;
  Status s = OpenWithHeader(dir, R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,24]},"b":{"dtype":"F32","shape":[4],"data_offsets":[24,40]}})");
  EXPECT_THAT(s.message(), HasSubstr("tensor 'a': byte length 24 does not match shape x dtype (16 bytes)"));
}

TEST(SafetensorsTest, RefusesOverlappingTensors) {
  TempDir dir;
  Status s = OpenWithHeader(dir, R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("overlaps"));
}

TEST(SafetensorsTest, RefusesHoles) {
  TempDir dir;
  Status s = OpenWithHeader(dir, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[4],"data_offsets":[24,40]}})");
  EXPECT_THAT(s.message(), HasSubstr("tensor 'b' leaves a hole of 16 bytes"));
}

TEST(SafetensorsTest, RefusesOffsetsPastTheEnd) {
  TempDir dir;
  Status s = OpenWithHeader(dir, R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"b":{"dtype":"F32","shape":[8],"data_offsets":[24,56]}})");
  EXPECT_THAT(s.message(), HasSubstr("tensor 'b': data_offsets [24, 56) run past the end"));
}

TEST(SafetensorsTest, RefusesMalformedHeaders) {
  struct Case {
    const char* header;
    const char* expected;
  } cases[] = {
      {R"({"a": {"dtype": "F32", )", "not well-formed JSON"},
      {R"([1, 2, 3])", "not a JSON object"},
      {R"({"a":{"dtype":"F32","shape":[-2,3],"data_offsets":[0,24]}})", "negative"},
      {R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[24,0]}})", "data_offsets end < begin"},
      {R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[-8,16]}})", "must be two non-negative integers"},
      {R"({"a":{"dtype":"F32","shape":[2,3]}})", "'data_offsets' must be"},
      {R"({"a":{"shape":[2,3],"data_offsets":[0,24]}})", "missing string field 'dtype'"},
      {R"({"a":{"dtype":"F32","shape":[3,3],"data_offsets":[0,24]}})", "does not match shape"},
      {R"({"__metadata__":{"k":1}})", "__metadata__ value 'k' is not a string"},
      {R"({"a": 5})", "header entry is not an object"},
  };
  for (const auto& c : cases) {
    TempDir dir;
    Status s = OpenWithHeader(dir, c.header);
    EXPECT_FALSE(s.ok()) << c.header;
    EXPECT_THAT(s.message(), HasSubstr(c.expected)) << c.header;
  }
}

TEST(SafetensorsTest, RefusesTruncatedFilesNamingTheTensor) {
  TempDir dir;
  const std::string path = WriteTwoTensors(dir);
  std::string bytes = ReadFile(path);
  WriteFile(path, bytes.substr(0, bytes.size() - 4));
  Status s = SafetensorsFile::Open(path).status();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("tensor 'b'"));
  EXPECT_THAT(s.message(), HasSubstr("truncated"));

  WriteFile(path, bytes.substr(0, 5));
  EXPECT_THAT(SafetensorsFile::Open(path).status().message(), HasSubstr("shorter than the 8-byte header length"));
  WriteFile(path, bytes.substr(0, 20));
  EXPECT_THAT(SafetensorsFile::Open(path).status().message(), HasSubstr("runs past the end of the file"));
}

TEST(SafetensorsTest, RefusesHugeHeaderLength) {
  TempDir dir;
  std::string bytes(8, '\0');
  bytes[5] = 0x7f;  // ~140 TB
  WriteFile(dir.File("x.safetensors"), bytes + "{}");
  Status s = SafetensorsFile::Open(dir.File("x.safetensors")).status();
  EXPECT_THAT(s.message(), HasSubstr("exceeds the limit"));
}

TEST(SafetensorsTest, MissingFileIsNotFound) {
  auto s = SafetensorsFile::Open("/nonexistent/model.safetensors").status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent/model.safetensors"));
}

TEST(CheckpointTest, OpensTheGoldenShardedCheckpoint) {
  auto ckpt = Checkpoint::Open(unmask::testing::TestDataPath("tiny-llada"));
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  EXPECT_EQ((*ckpt)->shards().size(), 2u);
  EXPECT_EQ((*ckpt)->tensor_names().size(), 21u);
  EXPECT_EQ((*ckpt)->total_bytes(), 32539264u);  // metadata.total_size of the index
  auto ref = (*ckpt)->Find("model.transformer.ln_f.weight");
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->info->dtype, DType::kBF16);
  EXPECT_THAT(ref->file->path(), HasSubstr("model-00002-of-00002.safetensors"));
  auto missing = (*ckpt)->Find("model.transformer.nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("'model.transformer.nope'"));
}

class ShardedCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override { unmask::testing::WriteRandomCheckpoint(dir_.path(), unmask::testing::SmallConfig(), 3); }
  TempDir dir_;
};

TEST_F(ShardedCheckpointTest, OpensAllShards) {
  auto ckpt = Checkpoint::Open(dir_.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  EXPECT_EQ((*ckpt)->shards().size(), 3u);
}

TEST_F(ShardedCheckpointTest, MissingShardNamesShardAndTensor) {
  std::filesystem::remove(dir_.File("model-00002-of-00003.safetensors"));
  Status s = Checkpoint::Open(dir_.path()).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("shard 'model-00002-of-00003.safetensors'"));
  EXPECT_THAT(s.message(), HasSubstr("holding tensor 'model.transformer."));
}

TEST_F(ShardedCheckpointTest, TruncatedShardNamesFileAndTensor) {
  const std::string shard = dir_.File("model-00003-of-00003.safetensors");
  std::string bytes = ReadFile(shard);
  WriteFile(shard, bytes.substr(0, bytes.size() / 2));
  Status s = Checkpoint::Open(dir_.path()).status();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("model-00003-of-00003.safetensors"));
  EXPECT_THAT(s.message(), HasSubstr("tensor 'model.transformer."));
}

TEST_F(ShardedCheckpointTest, IndexNamingATensorTheShardLacks) {
  std::string index = ReadFile(dir_.File("model.safetensors.index.json"));
  const std::string needle = "\"weight_map\": {";
  index.replace(index.find(needle), needle.size(), needle + "\n    \"extra.weight\": \"model-00001-of-00003.safetensors\",");
  WriteFile(dir_.File("model.safetensors.index.json"), index);
  Status s = Checkpoint::Open(dir_.path()).status();
  EXPECT_THAT(s.message(), HasSubstr("tensor 'extra.weight' is mapped to 'model-00001-of-00003.safetensors'"));
}

TEST_F(ShardedCheckpointTest, MalformedIndex) {
  WriteFile(dir_.File("model.safetensors.index.json"), "{\"weight_map\": [1,2]}");
  EXPECT_THAT(Checkpoint::Open(dir_.path()).status().message(), HasSubstr("missing object 'weight_map'"));
  WriteFile(dir_.File("model.safetensors.index.json"), "{oops");
  EXPECT_THAT(Checkpoint::Open(dir_.path()).status().message(), HasSubstr("not well-formed JSON"));
  WriteFile(dir_.File("model.safetensors.index.json"), R"({"weight_map": {"a": "../../etc/passwd"}})");
  EXPECT_THAT(Checkpoint::Open(dir_.path()).status().message(), HasSubstr("invalid shard file"));
}

TEST(CheckpointTest, EmptyDirectoryIsNotFound) {
  TempDir dir;
  Status s = Checkpoint::Open(dir.path()).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("no model.safetensors"));
}

}  // namespace
}  // namespace unmask::checkpoint
