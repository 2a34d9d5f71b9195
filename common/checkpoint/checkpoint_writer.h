// Writes safetensors files and sharded Hugging Face checkpoints tensor by tensor, so that a
// checkpoint of any size is produced with one tensor in memory at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/checkpoint/dtype.h"
#include "common/util/status.h"

namespace unmask::checkpoint {

struct TensorSpec {
  std::string name;
  DType dtype = DType::kBF16;
  std::vector<std::int64_t> shape;
  std::uint64_t nbytes() const;
};

// Fills `dst` (spec.nbytes() bytes) with the tensor's data.
using TensorFiller = std::function<void(const TensorSpec& spec, std::uint8_t* dst)>;

// Writes one safetensors file holding `specs` in order.
Status WriteSafetensors(const std::string& path, const std::vector<TensorSpec>& specs,
                        const TensorFiller& fill,
                        const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// Writes `specs` into `num_shards` files named model-0000K-of-0000N.safetensors plus
// model.safetensors.index.json (or a single model.safetensors when num_shards == 1).
// Tensors are split so that shards hold about the same number of bytes.
Status WriteShardedCheckpoint(const std::string& dir, const std::vector<TensorSpec>& specs,
                              int num_shards, const TensorFiller& fill);

}  // namespace unmask::checkpoint
