#include "tests/engine/temp_checkpoint.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "common/checkpoint/checkpoint_writer.h"
#include "common/util/remove_tree.h"

namespace unmask::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base ? base : "/tmp") + "/unmask-test-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  unmask::util::RemoveTree(path_);
}

checkpoint::LladaConfig SmallConfig() {
  checkpoint::LladaConfig c;
  c.d_model = 32;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.n_layers = 2;
  c.mlp_hidden_size = 64;
  c.vocab_size = c.embedding_size = 300;
  c.mask_token_id = 299;
  c.eos_token_id = c.pad_token_id = 298;
  c.max_sequence_length = 512;
  return c;
}

void WriteRandomCheckpoint(const std::string& dir, const checkpoint::LladaConfig& config, int num_shards,
                           std::uint32_t seed) {
  WriteFile(dir + "/config.json", config.ToJsonText());
  std::vector<checkpoint::TensorSpec> specs;
  for (const auto& t : checkpoint::ExpectedTensors(config)) specs.push_back({t.name, checkpoint::DType::kBF16, t.shape});
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 0.5f);
  auto fill = [&](const checkpoint::TensorSpec& spec, std::uint8_t* dst) {
    const bool is_norm = spec.shape.size() == 1;
    for (std::uint64_t i = 0; i < spec.nbytes() / 2; ++i) {
      float v = is_norm ? 1.0f + 0.1f * normal(rng) : normal(rng);
      std::uint32_t bits;
      std::memcpy(&bits, &v, 4);
      std::uint16_t bf = static_cast<std::uint16_t>(bits >> 16);  // truncation is fine for test data
      std::memcpy(dst + 2 * i, &bf, 2);
    }
  };
  auto s = checkpoint::WriteShardedCheckpoint(dir, specs, num_shards, fill);
  if (!s.ok()) throw std::runtime_error(s.ToString());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string ReadHeader(const std::string& path) {
  std::string all = ReadFile(path);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<std::uint8_t>(all[i]);
  return all.substr(8, n);
}

void RewriteHeader(const std::string& path, const std::string& header_json) {
  std::string all = ReadFile(path);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<std::uint8_t>(all[i]);
  std::string data = all.substr(8 + n);
  std::string out(8, '\0');
  const std::uint64_t len = header_json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  WriteFile(path, out + header_json + data);
}

}  // namespace unmask::testing
