// A Hugging Face checkpoint directory: config.json plus either one model.safetensors or shards
// listed by model.safetensors.index.json. Every shard named by the index is opened and validated.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/checkpoint/safetensors.h"
#include "common/util/status.h"

namespace unmask::checkpoint {

// A tensor located in one shard of the checkpoint.
struct TensorRef {
  const SafetensorsFile* file = nullptr;
  const TensorInfo* info = nullptr;
  const std::uint8_t* data() const { return file->Data(*info); }
};

class Checkpoint {
 public:
  static StatusOr<std::unique_ptr<Checkpoint>> Open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  // Tensor names in a stable order: shard by shard, in header order.
  const std::vector<std::string>& tensor_names() const { return names_; }
  // NotFound naming the tensor (and the index when sharded) when absent.
  StatusOr<TensorRef> Find(const std::string& name) const;
  bool Contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const std::vector<std::shared_ptr<SafetensorsFile>>& shards() const { return shards_; }
  std::uint64_t total_bytes() const;

 private:
  Status OpenSingle(const std::string& path);
  Status OpenSharded(const std::string& index_path);
  Status AddShard(std::shared_ptr<SafetensorsFile> shard);

  std::string dir_;
  std::vector<std::shared_ptr<SafetensorsFile>> shards_;
  std::map<std::string, TensorRef> tensors_;
  std::vector<std::string> names_;
};

}  // namespace unmask::checkpoint
