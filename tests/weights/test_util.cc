#include "tests/weights/test_util.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "common/weights/convert.h"
#include "common/util/remove_tree.h"

namespace unmask::weights::testing {

using checkpoint::DType;

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/unmask-weights-test-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) std::abort();
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  unmask::util::RemoveTree(path_);
}

std::string TinyLladaDir() { return std::string(UNMASK_TEST_DATA) + "/tiny-llada"; }

checkpoint::LladaConfig SmallConfig(std::int64_t d_model, std::int64_t n_layers, std::int64_t mlp, std::int64_t vocab) {
  checkpoint::LladaConfig c;
  c.d_model = d_model;
  c.n_heads = 4;
  c.n_kv_heads = 4;
  c.n_layers = n_layers;
  c.mlp_hidden_size = mlp;
  c.vocab_size = vocab;
  c.embedding_size = vocab;
  c.mask_token_id = vocab - 1;
  c.eos_token_id = vocab - 2;
  c.pad_token_id = vocab - 2;
  return c;
}

std::vector<checkpoint::TensorSpec> LladaSpecs(const checkpoint::LladaConfig& config, DType dtype) {
  std::vector<checkpoint::TensorSpec> specs;
  for (const auto& t : checkpoint::ExpectedTensors(config)) specs.push_back({t.name, dtype, t.shape});
  return specs;
}

std::vector<float> RandomValues(const std::string& name, std::int64_t n, std::uint32_t seed, float stddev) {
  std::seed_seq seq{seed, static_cast<std::uint32_t>(std::hash<std::string>()(name))};
  std::mt19937 rng(seq);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

Status WriteCheckpoint(const std::string& dir, const checkpoint::LladaConfig& config,
                       const std::vector<checkpoint::TensorSpec>& specs, int num_shards, std::uint32_t seed) {
  WriteFile(dir + "/config.json", config.ToJsonText());
  return checkpoint::WriteShardedCheckpoint(
      dir, specs, num_shards, [&](const checkpoint::TensorSpec& spec, std::uint8_t* dst) {
        std::int64_t n = 1;
        for (auto d : spec.shape) n *= d;
        const std::vector<float> values = RandomValues(spec.name, n, seed);
        if (ConvertFloats(values.data(), DType::kF32, dst, spec.dtype, values.size()).ok()) return;
        for (std::int64_t i = 0; i < n; ++i) dst[i * checkpoint::DTypeSize(spec.dtype)] = static_cast<std::uint8_t>(i);
      });
}

std::vector<std::string> LeakedSegmentsOfThisProcess() {
  std::vector<std::string> out;
  const std::string marker = "-" + std::to_string(::getpid()) + "-";
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return out;
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name.rfind("unmask-", 0) == 0 && name.find(marker) != std::string::npos) out.push_back(name);
  }
  ::closedir(dir);
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<float> SourceAsF32(const std::uint8_t* data, DType dtype, std::int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(n));
  if (!ToF32(data, dtype, out.data(), out.size()).ok()) out.clear();
  return out;
}

}  // namespace unmask::weights::testing
