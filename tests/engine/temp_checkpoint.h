// Writes small random checkpoints in the exact Hugging Face LLaDA layout into a temp folder,
// and corrupts them in the ways the bad-input tests need.
#pragma once

#include <cstdint>
#include <string>

#include "common/checkpoint/llada_config.h"

namespace unmask::testing {

// A fresh empty directory under $TMPDIR, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

checkpoint::LladaConfig SmallConfig();  // d_model 32, 2 layers, 4 heads, 2 KV heads, vocab 300

// Writes config.json and random bf16 weights (seeded) in `num_shards` shards.
void WriteRandomCheckpoint(const std::string& dir, const checkpoint::LladaConfig& config, int num_shards,
                           std::uint32_t seed = 1);

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& bytes);
// Replaces the safetensors header of `path` with `header_json` (data bytes kept).
void RewriteHeader(const std::string& path, const std::string& header_json);
std::string ReadHeader(const std::string& path);

}  // namespace unmask::testing
