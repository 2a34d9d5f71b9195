// Helpers for the weight-store tests: temp dirs, small random LLaDA checkpoints, shm leak checks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/checkpoint/checkpoint_writer.h"
#include "common/checkpoint/llada_config.h"
#include "common/util/status.h"

namespace unmask::weights::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string TinyLladaDir();  // tests/data/tiny-llada

// A LLaDA config with small dimensions (vocabulary `vocab`; special ids inside it).
checkpoint::LladaConfig SmallConfig(std::int64_t d_model = 64, std::int64_t n_layers = 2, std::int64_t mlp = 128,
                                    std::int64_t vocab = 256);

// The tensors of `config` in checkpoint order, all of `dtype`.
std::vector<checkpoint::TensorSpec> LladaSpecs(const checkpoint::LladaConfig& config,
                                               checkpoint::DType dtype = checkpoint::DType::kBF16);

// Deterministic N(0, stddev) values for tensor `name` (seeded from seed and the name).
std::vector<float> RandomValues(const std::string& name, std::int64_t n, std::uint32_t seed, float stddev = 0.02f);

// Writes config.json and the safetensors shards of `specs` into dir, values from RandomValues.
Status WriteCheckpoint(const std::string& dir, const checkpoint::LladaConfig& config,
                       const std::vector<checkpoint::TensorSpec>& specs, int num_shards, std::uint32_t seed = 7);

// /dev/shm entries "unmask-*-<pid of this process>-*".
std::vector<std::string> LeakedSegmentsOfThisProcess();

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& bytes);

// Source tensor as f32 (any float dtype).
std::vector<float> SourceAsF32(const std::uint8_t* data, checkpoint::DType dtype, std::int64_t n);

}  // namespace unmask::weights::testing
